"""What the service says about itself: /healthz, /readyz, eco_ping's status report, and the one
upstream probe that both `eco_ping(check_api=true)` and `--check` run (`api_check`), so the two
always agree on reachability and on whether the token was accepted."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from anyio import to_thread
from django import db
from mcp_types.version import LATEST_MODERN_VERSION

from catalog.outage import DATABASE_DOWN
from eco_core import __version__
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from mcp_gateway import ports
from mcp_gateway.tokens import choose_token
from upstream.client import UpstreamClient
from upstream.context import call_scope
from upstream.ratelimit import ANONYMOUS_UPSTREAM_LIMIT

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


# eco_ping read the catalog state from the database on every call (a fresh connection each time,
# the worker pool being anyio's): about a third of its time under load. One read a second serves
# every ping in between, as the index checks catalog versions; a swap in this process shows at once.
STATUS_TTL_S = 1.0
_status_cache: tuple[Any, ...] = ()
# eco_ping's catalog status while the database does not answer: nothing known of the catalogs.
DATABASE_DOWN_STATUS: dict[str, Any] = {"ready": False, "degraded": True, "database": "down"}


async def catalog_status(cfg: EcoConfig) -> dict[str, Any]:
    """The catalog status with `database` "up", or DATABASE_DOWN_STATUS when the database is
    unreachable: a report, never an error (eco_ping answers through an outage). Either is kept
    STATUS_TTL_S, so pings during an outage do not each wait for a connection to fail."""
    global _status_cache
    key = (ports.catalog_status, cfg, ports.catalog_generation())
    if _status_cache and _status_cache[:3] == key and time.monotonic() < _status_cache[3]:
        return _status_cache[4]
    was_down = bool(_status_cache) and _status_cache[4] is DATABASE_DOWN_STATUS
    try:
        status = {**await to_thread.run_sync(_db_call, ports.catalog_status, cfg), "database": "up"}
    except DATABASE_DOWN as exc:
        if not was_down:  # once an outage, not once a second; the class only (see readyz)
            log.warning("catalog status: database unavailable (%s)", type(exc).__name__)
        status = DATABASE_DOWN_STATUS
    else:
        if was_down:
            log.info("catalog status: the database answers again")
    _status_cache = (*key, time.monotonic() + STATUS_TTL_S, status)
    return status


TokenStatus = Literal["none", "not_sent", "unknown", "accepted", "not_recognised"]


@dataclass(frozen=True)
class ApiProbe:
    """One probe's findings. `token_status` is the one rule for "was the token accepted"."""

    reachable: bool
    latency_ms: float
    token_sent: bool
    token_status: TokenStatus
    error: EcoError | None = None

    @property
    def token_accepted(self) -> bool | None:
        """Known only when the token was sent and the upstream answered with a limit."""
        return {"accepted": True, "not_recognised": False}.get(self.token_status)

    def report(self) -> dict[str, Any]:
        """eco_ping's `api` object."""
        out: dict[str, Any] = {"reachable": self.reachable, "latencyMs": self.latency_ms}
        if self.error is None:
            out["status"] = 200
        else:
            out.update(error=self.error.message, errorCode=self.error.code)
        if self.token_accepted is not None:
            out["tokenAccepted"] = self.token_accepted
        return out


def _token_status(*, token: bool, sent: bool, answered: bool, limit: int | None) -> TokenStatus:
    if not token:
        return "none"
    if not sent:
        return "not_sent"
    if not answered or limit is None:
        # No answer (or no limit header) from this probe: the last limit seen may be old.
        return "unknown"
    # NEON answers an unrecognised token with the anonymous limit instead of refusing it.
    return "accepted" if limit > ANONYMOUS_UPSTREAM_LIMIT else "not_recognised"


async def api_check(client: Any, cfg: EcoConfig, *, token_configured: bool) -> ApiProbe:
    """One uncached ~1 KB request through `client` (rate-limited, counted and token-scoped like
    any other call), run inside the caller's call scope; a failure is reported, not raised."""
    # The probe is a public endpoint: the token goes with it only when tokens are sent to every
    # request (upstream.http's rule for public endpoints).
    sent = token_configured and cfg.token_for_public_endpoints
    started = time.perf_counter()
    error: EcoError | None = None
    try:
        await client.probe()
    except EcoError as exc:
        error = exc
    latency = round((time.perf_counter() - started) * 1000, 1)
    # Any HTTP answer, even an error status, proves the upstream is reachable.
    reachable = error is None or error.code not in UNREACHABLE
    status = _token_status(token=token_configured, sent=sent, answered=reachable,
                           limit=client.rate_limit_info().get("limit"))
    return ApiProbe(reachable=reachable, latency_ms=latency, token_sent=sent, token_status=status, error=error)


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
