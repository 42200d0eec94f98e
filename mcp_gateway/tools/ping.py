"""eco_ping: configuration and health as the agent sees it; never the token."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from eco_service import __version__
from mcp_gateway import health
from mcp_gateway.calls import CallContext
from mcp_gateway.models import Envelope, NextStep, Source, ToolInput, WireModel
from mcp_gateway.registry import ToolSpec


class PingInput(ToolInput):
    check_api: bool = Field(False, description="Also make one small upstream request (GET /taxonomy, about 1 KB).")


class _Open(WireModel):
    # Filled from other components' reports, which may add keys over time.
    model_config = ConfigDict(extra="allow")


class CatalogEntry(_Open):
    count: int | None = None
    age_seconds: float | None = None
    source: str | None = None
    stale: bool = False


class CatalogStatus(_Open):
    ready: bool = False
    catalogs: dict[str, CatalogEntry] = Field(default_factory=dict)
    error: str | None = None


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


def _catalog(raw: dict) -> CatalogStatus:
    catalogs = {k: CatalogEntry.model_validate(v) for k, v in raw.items() if isinstance(v, dict)}
    return CatalogStatus(ready=bool(raw.get("ready")), catalogs=catalogs)


def _rate_limit(raw: object) -> RateLimitInfo | None:
    if not isinstance(raw, dict):
        return None
    reset = raw.get("reset")
    try:
        reset_s = float(reset) if reset is not None else None
    except (TypeError, ValueError):
        reset_s = None
    return RateLimitInfo(limit=raw.get("limit"), remaining=raw.get("remaining"), reset_seconds=reset_s)


async def ping(args: PingInput, call: CallContext) -> PingOutput:
    cfg = call.cfg
    catalog = _catalog(await health.catalog_status(cfg))
    api, rate = None, None
    if args.check_api:
        verdict = await health.api_check(cfg)
        api = ApiCheck(
            reachable=bool(verdict.get("reachable")),
            status=verdict.get("status"),
            latency_ms=verdict.get("latencyMs"),
            error=verdict.get("error"),
            token_accepted=verdict.get("tokenAccepted"),
        )
        rate = _rate_limit(verdict.get("rateLimit"))
    steps = [] if catalog.ready else [
        NextStep(tool="eco_ping", arguments={"check_api": True}, why="Check that the upstream API answers.")
    ]
    return PingOutput(
        version=__version__,
        protocol_version=call.protocol_version,
        transport=call.transport,
        token_configured=call.token_configured,
        token_source=call.token_source,
        downloads_enabled=cfg.downloads_enabled,
        download_dir=str(cfg.download_dir) if cfg.downloads_enabled else None,
        api_base_url=cfg.eco.base_url,
        graphql_url=cfg.eco.graphql_url,
        catalog=catalog,
        cache=CacheInfo(enabled=cfg.cache.enabled, max_entries=cfg.cache.max_entries),
        rate_limit=rate,
        api=api,
        next_steps=steps,
        source=Source(origin="upstream" if api else "local", api_base_url=cfg.eco.base_url),
    )


TOOLS = [
    ToolSpec(
        name="eco_ping",
        title="Service status",
        description=(
            "Report the service's version, protocol, transport, whether an upstream token is available "
            "(never the token itself) and where it comes from, catalog warmth, cache and rate-limit status. "
            "With check_api=true, also make one small upstream request to check reachability."
        ),
        surface="diagnostics",
        input_model=PingInput,
        output_model=PingOutput,
        handler=ping,
        endpoints=("GET /taxonomy",),
    )
]
