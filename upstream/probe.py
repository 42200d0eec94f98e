"""The one upstream probe: `eco_ping(check_api=true)` and `--check` both run `api_check`, so the
two always agree on reachability and on whether the token was accepted."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from upstream.ratelimit import ANONYMOUS_UPSTREAM_LIMIT

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

# Errors that mean the upstream did not answer at all (anything else is an answer).
UNREACHABLE = frozenset({"upstream_unavailable", "upstream_error"})

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
            if self.error.code == "rate_limited":
                out["retryAfterSeconds"] = self.error.details.get("retryAfterSeconds")
        if self.token_accepted is not None:
            out["tokenAccepted"] = self.token_accepted
        return out


def _token_status(*, token: bool, sent: bool, answered: bool, limit: int | None, refused: bool = False) -> TokenStatus:
    if not token:
        return "none"
    if not sent:
        return "not_sent"
    if not answered or limit is None or refused:
        # A 429 (refused) says the budget is spent, not whose budget it was.
        # No answer (or no limit header) from this probe: the last limit seen may be old.
        return "unknown"
    # NEON answers an unrecognised token with the anonymous limit instead of refusing it.
    return "accepted" if limit > ANONYMOUS_UPSTREAM_LIMIT else "not_recognised"


async def api_check(client: UpstreamClient, cfg: EcoConfig, *, token_configured: bool) -> ApiProbe:
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
                           limit=client.rate_limit_info().get("limit"),
                           refused=error is not None and error.code == "rate_limited")
    return ApiProbe(reachable=reachable, latency_ms=latency, token_sent=sent, token_status=status, error=error)
