"""What the service says about itself outside a tool call: /healthz, /readyz and `--check` (the
same upstream probe eco_ping(check_api=true) runs, upstream.probe.api_check). eco_ping itself is
families/health.py."""

from __future__ import annotations

import logging
from typing import Any, Literal

from anyio import to_thread
from django import db
from mcp_types.version import LATEST_MODERN_VERSION

from eco_core import __version__
from eco_core.config import EcoConfig
from mcp_gateway import ports
from mcp_gateway.tokens import choose_token
from upstream.client import UpstreamClient
from upstream.context import call_scope
from upstream.probe import api_check

log = logging.getLogger("eco.gateway")


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


async def check(cfg: EcoConfig, client: Any = None) -> dict[str, Any]:
    """`--check`: eco_ping(check_api=true)'s probe, run in process as an eco_ping call runs it
    (token chosen by the gateway's rule, inside a call scope with the call deadline), reported as
    a JSON verdict. Uses `client` or a short-lived client of its own."""
    own = client is None
    client = client or UpstreamClient(cfg)
    choice = choose_token(cfg, None)
    try:
        with call_scope(token=choice.token, token_source=choice.source, deadline_s=cfg.eco.call_deadline_s):
            probe = await api_check(client, cfg, token_configured=choice.source != "none")
            rate = client.rate_limit_info()
        verdict: dict[str, Any] = {
            "reachable": probe.reachable,
            "apiBaseUrl": cfg.eco.base_url,
            "tokenConfigured": choice.source != "none",
            "tokenSource": choice.source,
            # Where a configured token was read: the variable (ECO_TOKEN, ...) or "yaml", as
            # --print-config says; tokenSource keeps eco_ping's vocabulary (config, request, none).
            "tokenFrom": cfg.token_origin if choice.source == "config" else None,
            "tokenSent": probe.token_sent,
            "tokenStatus": probe.token_status,
            "latencyMs": probe.latency_ms,
            "rateLimit": rate,
            "graphqlBreaker": client.breaker_state(),
        }
        if probe.error is not None:
            verdict["error"] = {"code": probe.error.code, "message": probe.error.message}
        return verdict
    finally:
        if own:
            await client.aclose()
