"""What the service says about itself: /healthz, /readyz and eco_ping's status report."""

from __future__ import annotations

import logging
import time
from typing import Any, Literal

from anyio import to_thread
from django import db
from mcp_types.version import LATEST_MODERN_VERSION

from eco_core import __version__
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from mcp_gateway import ports
from mcp_gateway.tokens import choose_token

log = logging.getLogger("eco.gateway")

# Errors that mean the upstream did not answer at all (anything else is an answer).
UNREACHABLE = frozenset({"upstream_unavailable", "upstream_error"})


def healthz(transport: Literal["stdio", "http"]) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "protocolVersion": LATEST_MODERN_VERSION, "transport": transport}


def _db_call(fn: Any, *args: Any) -> Any:
    """Run an ORM read in a worker thread and close that thread's connections afterwards: the
    worker pool is anyio's, not Django's, so nothing else would ever close them. These are
    probes and diagnostics, not hot paths, so a fresh connection per call is affordable."""
    try:
        return fn(*args)
    finally:
        db.connections.close_all()


def token_configured(cfg: EcoConfig) -> bool:
    """Whether a call that sends no token header of its own runs with a token: the same rule
    eco_ping reports for such a call (stdio: the configured token; HTTP: only when it is lent).
    /readyz has no caller to speak of, so it answers for the anonymous one."""
    return choose_token(cfg, {}).source != "none"


async def readyz(cfg: EcoConfig) -> tuple[int, dict[str, Any]]:
    # The catalog reads the database: keep the ORM off the event loop.
    try:
        ready, body = await to_thread.run_sync(_db_call, ports.readiness, cfg)
    except db.Error as exc:
        # Not ready is the truthful answer; the reason is the exception's class only, since a
        # driver's message can carry a connection string.
        log.warning("readiness: database unavailable (%s)", type(exc).__name__)
        return 503, {"status": "unavailable", "reason": "database unavailable"}
    if "tokenConfigured" in body:
        body = {**body, "tokenConfigured": token_configured(cfg)}
    return (200 if ready else 503), body


async def catalog_status(cfg: EcoConfig) -> dict[str, Any]:
    return await to_thread.run_sync(_db_call, ports.catalog_status, cfg)


async def api_check(client: Any) -> dict[str, Any]:
    """One uncached ~1 KB request through the shared client (so it is rate-limited, counted and
    token-scoped like any other call); a failure is reported, not raised."""
    started = time.perf_counter()
    try:
        await client.probe()
    except EcoError as exc:
        return {"reachable": exc.code not in UNREACHABLE, "error": exc.message, "errorCode": exc.code,
                "latencyMs": round((time.perf_counter() - started) * 1000, 1)}
    return {"reachable": True, "status": 200, "latencyMs": round((time.perf_counter() - started) * 1000, 1)}
