"""eco_ping: configuration and health as the agent sees it; never the token."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from eco_core import __version__
from mcp_gateway import health, ports
from mcp_gateway.context import CallContext
from mcp_gateway.models import Envelope, NextStep, Source, ToolInput, WireModel
from mcp_gateway.registry import ToolSpec, default_registry


class PingInput(ToolInput):
    check_api: bool = Field(False, description="Also make one ~1 KB upstream request (GET /taxonomy).")


class _Open(WireModel):
    # Filled from other components' reports, which may add keys over time.
    model_config = ConfigDict(extra="allow")


class CatalogEntry(_Open):
    count: int | None = None
    age_seconds: float | None = None
    source: str | None = None
    stale: bool = False
    rest_base: str | None = None
    graphql_url: str | None = None
    upstream_mismatch: str | None = Field(None, description="Why not served; null: served.")


class CatalogStatus(_Open):
    ready: bool = False
    degraded: bool = False
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


def _catalog(raw: dict[str, Any], breaker: dict[str, Any]) -> CatalogStatus:
    catalogs = {k: CatalogEntry.model_validate(v) for k, v in raw.items() if isinstance(v, dict)}
    return CatalogStatus(ready=bool(raw.get("ready")), degraded=bool(raw.get("degraded")), catalogs=catalogs,
                         graphql_breaker=breaker)


DOWNLOAD_TOOL = "eco_download_files"


def downloads_enabled(call: CallContext) -> bool:
    """Downloads are enabled for this caller only when the setting allows them AND the download
    tool is listed on this call's transport (it is stdio-only): over HTTP an agent told `true`
    would reach for a tool it cannot call."""
    listed = {s.name for s in default_registry().listed(http=call.transport == "http")}
    return call.cfg.downloads_enabled and DOWNLOAD_TOOL in listed


async def ping(args: PingInput, call: CallContext) -> PingOutput:
    cfg = call.cfg
    downloads = downloads_enabled(call)
    client = ports.upstream_client()
    catalog = _catalog(await health.catalog_status(cfg), client.breaker_state())
    api = None
    if args.check_api:
        probe = await health.api_check(client, cfg, token_configured=call.token_configured)
        api = ApiCheck.model_validate(probe.report())
    rate = RateLimitInfo.model_validate(client.rate_limit_info())
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
        cache=CacheInfo.model_validate(client.cache_info()),
        rate_limit=rate if rate.limit is not None or rate.remaining is not None else None,
        api=api,
        next_steps=steps,
        source=Source(origin="upstream" if api else "local", api_base_url=cfg.eco.base_url,
                      endpoints=["GET /taxonomy"] if api else []),
    )


TOOLS = [
    ToolSpec(
        name="eco_ping",
        title="Service status",
        description=(
            "Version, protocol, transport, token availability and source (never the token), catalog "
            "warmth and upstream, cache and rate-limit status; check_api=true also checks the upstream."
        ),
        surface="diagnostics",
        input_model=PingInput,
        output_model=PingOutput,
        handler=ping,
        endpoints=("GET /taxonomy",),
    )
]
