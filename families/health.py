"""The health family: eco_ping. The service as the agent sees it: version, protocol, transport,
the token's source (never the token), whether downloads are open to this caller, catalog warmth,
the upstream cache, rate limit and GraphQL breaker, and with check_api one upstream probe (the
same one `--check` runs, upstream.probe)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from catalog.status import status_report
from eco_core import __version__
from eco_core.memo import memos
from eco_core.wire import Envelope, NextStep, Source, ToolInput, WireModel, returned_again
from families.call import CallContext
from upstream.probe import api_check

DOWNLOAD_TOOL = "eco_download_files"


class PingInput(ToolInput):
    check_api: bool = Field(False, description="One small upstream request (GET /taxonomy).")


class _Open(WireModel):
    # Filled from other components' reports, which may add keys over time.
    model_config = ConfigDict(extra="allow")


def _absent_if_none(value: Any) -> bool:
    return value is None


class CatalogEntry(_Open):
    count: int | None = None
    age_seconds: float | None = None
    source: str | None = None
    stale: bool = False
    # Where the catalog was built from, only when that is not the configured upstream (the result's
    # apiBaseUrl and graphqlUrl): repeated for every catalog it was a third of the whole answer.
    rest_base: str | None = Field(None, exclude_if=_absent_if_none)
    graphql_url: str | None = Field(None, exclude_if=_absent_if_none)
    upstream_mismatch: str | None = Field(None, exclude_if=_absent_if_none,
                                          description="Why not served; absent: served.")


class CatalogStatus(_Open):
    ready: bool = False
    degraded: bool = False
    database: Literal["up", "down"] = Field("up", description=(
        "down: no catalogs; calls needing them fail catalog_unavailable."))
    catalogs: dict[str, CatalogEntry] = Field(default_factory=dict)
    graphql_breaker: dict[str, Any] | None = None


class CacheInfo(_Open):
    enabled: bool
    backend: str | None = None
    entries: int | None = None
    max_entries: int | None = None


class RateLimitInfo(_Open):
    limit: int | None = None
    remaining: int | None = None
    reset_seconds: float | None = None


class ApiCheck(_Open):
    reachable: bool
    status: int | None = None
    latency_ms: float | None = None
    error: str | None = None
    token_accepted: bool | None = None


class PingOutput(Envelope):
    pong: Literal["ok"] = "ok"
    version: str
    protocol_version: str
    transport: Literal["stdio", "http"]
    token_configured: bool
    token_source: Literal["config", "request", "none"]
    downloads_enabled: bool
    download_dir: str | None
    api_base_url: str
    graphql_url: str
    catalog: CatalogStatus
    cache: CacheInfo
    rate_limit: RateLimitInfo | None
    api: ApiCheck | None


# A ping without check_api reports what it was given: under load most pings in a row are given
# the same (the catalog status is re-read once a second; rate limit, cache and breaker move only
# with upstream traffic), and building and validating the report was most of the tool's own time.
# A report is returned again while every input is the same; it is never changed after it is built.
# Keyed by the configuration and the catalog status (a new status is a new dict), with the rest
# compared by value.
_reports = memos.by_identity("health.reports", max_entries=8)


async def ping(args: PingInput, call: CallContext) -> PingOutput:
    cfg, client = call.cfg, call.client
    # Enabled for this caller only when the setting allows them AND the download tool is listed on
    # this call's transport (it is stdio-only): over HTTP an agent told true would reach for a tool
    # it cannot call.
    downloads = cfg.downloads_enabled and DOWNLOAD_TOOL in call.listed_tools
    status = await status_report(cfg)
    breaker = client.breaker_state()
    if not args.check_api:
        given = (breaker, client.rate_limit_info(), client.cache_info(), downloads, call.protocol_version,
                 call.transport, call.token_configured, call.token_source)
        kept = _reports.get(cfg, status)
        if kept is not None and kept[0] == given:
            return kept[1]
        out = returned_again(_report(call, downloads, _catalog(status, breaker), given[1], given[2], None))
        _reports.put(cfg, status, value=(given, out))
        return out
    probe = await api_check(client, cfg, token_configured=call.token_configured)
    api = ApiCheck.model_validate(probe.report())
    return _report(call, downloads, _catalog(status, breaker), client.rate_limit_info(), client.cache_info(), api)


def _report(call: CallContext, downloads: bool, catalog: CatalogStatus, rate_raw: dict[str, Any],
            cache_raw: dict[str, Any], api: ApiCheck | None) -> PingOutput:
    cfg = call.cfg
    rate = RateLimitInfo.model_validate(rate_raw)
    steps = []
    if not catalog.ready:
        steps.append(NextStep(tool="eco_ping", arguments={"check_api": True}, why="Check that the upstream API answers."))
    return PingOutput(
        version=__version__,
        protocol_version=call.protocol_version,
        transport=call.transport,
        token_configured=call.token_configured,
        token_source=call.token_source,
        downloads_enabled=downloads,
        download_dir=str(cfg.download_dir) if downloads else None,
        api_base_url=cfg.eco.base_url,
        graphql_url=cfg.eco.graphql_url,
        catalog=catalog,
        cache=CacheInfo.model_validate(cache_raw),
        rate_limit=rate if rate.limit is not None or rate.remaining is not None else None,
        api=api,
        next_steps=steps,
        source=Source(origin="upstream" if api else "local", api_base_url=cfg.eco.base_url,
                      endpoints=["GET /taxonomy"] if api else []),
    )


def _entry(raw: dict[str, Any]) -> CatalogEntry:
    """One catalog as eco_ping shows it: a key whose value is null is left out (lastError when
    the last refresh worked, upstreamMismatch when the catalog is served), and so are the
    addresses it was built from when they are the configured upstream's: the bytes of every
    result are paid per call on the wire and in the SDK, and these said nothing new."""
    shown = {k: v for k, v in raw.items() if v is not None}
    if raw.get("upstreamMismatch") is None:
        shown.pop("restBase", None)
        shown.pop("graphqlUrl", None)
    return CatalogEntry.model_validate(shown)


def _catalog(raw: dict[str, Any], breaker: dict[str, Any]) -> CatalogStatus:
    catalogs = {k: _entry(v) for k, v in raw.items() if isinstance(v, dict)}
    # openUntil is null while the breaker is closed: left out, as in the catalogs.
    return CatalogStatus(ready=bool(raw.get("ready")), degraded=bool(raw.get("degraded")),
                         database=raw.get("database", "up"), catalogs=catalogs,
                         graphql_breaker={k: v for k, v in breaker.items() if v is not None})
