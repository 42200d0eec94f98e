"""What the service says about itself: /healthz, /readyz and eco_ping's status report."""

from __future__ import annotations

import logging
from typing import Any, Literal

from anyio import to_thread
from mcp_types.version import LATEST_MODERN_VERSION

from eco_service import __version__
from eco_service.config import EcoConfig
from mcp_gateway import ports

log = logging.getLogger("eco.gateway")


def healthz(transport: Literal["stdio", "http"]) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "protocolVersion": LATEST_MODERN_VERSION, "transport": transport}


async def readyz(cfg: EcoConfig) -> tuple[int, dict[str, Any]]:
    # The catalog reads the database: keep the ORM off the event loop.
    ready, body = await to_thread.run_sync(ports.readiness, cfg)
    return (200 if ready else 503), body


async def catalog_status(cfg: EcoConfig) -> dict[str, Any]:
    return await to_thread.run_sync(ports.catalog_status, cfg)


async def api_check(cfg: EcoConfig) -> dict[str, Any]:
    from eco_service.healthcheck import run_check

    return await to_thread.run_sync(run_check, cfg)
