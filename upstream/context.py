"""Per-call context shared by the gateway (which sets it) and the upstream client (which reads
and fills it), carried in context variables so no function signature has to thread it through.

    with call_scope(token=caller_token, token_source="request", deadline_s=30) as acct:
        ... any number of upstream calls ...
    acct.to_meta()   # -> the result `_meta["io.eco-mcp/upstream"]`

The deadline bounds the call's whole upstream time (requests, retries, backoff, rate-limit and
slot waits): the client stops there with upstream_unavailable. A scope without one (catalog
refreshes, the CLI) is bound only by the per-request timeouts. A nested scope (a first-use
refresh inside a tool call) has its own accounting and deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from eco_core.redact import register_secret, token_hash

TokenSource = Literal["config", "request", "none"]


@dataclass
class Accounting:
    """What one tool call cost upstream. Mutated by the client; read by the envelope."""

    token: str | None = field(default=None, repr=False)
    token_source: TokenSource = "none"
    requests: int = 0
    cache_hits: int = 0
    stale_served: bool = False
    rate_limit_remaining: int | None = None
    rate_limit_limit: int | None = None
    endpoints: list[str] = field(default_factory=list)
    deadline_s: float | None = None
    # time.monotonic() at which the deadline passes; a real clock, since it bounds real waiting.
    deadline_at: float | None = None

    def remaining(self) -> float | None:
        """Seconds left before the deadline (<= 0 once passed), or None without one."""
        return None if self.deadline_at is None else self.deadline_at - time.monotonic()

    @property
    def identity(self) -> str:
        return token_hash(self.token)

    def to_meta(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cacheHits": self.cache_hits,
            "staleServed": self.stale_served,
            "rateLimitRemaining": self.rate_limit_remaining,
            "rateLimitLimit": self.rate_limit_limit,
            "identity": self.identity,
        }


_current: contextvars.ContextVar[Accounting | None] = contextvars.ContextVar("eco_call", default=None)


def current() -> Accounting | None:
    return _current.get()


@contextlib.contextmanager
def call_scope(*, token: str | None = None, token_source: TokenSource = "none",
               deadline_s: float | None = None) -> Iterator[Accounting]:
    register_secret(token)
    acct = Accounting(token=token, token_source=token_source if token else "none", deadline_s=deadline_s,
                      deadline_at=None if deadline_s is None else time.monotonic() + deadline_s)
    reset = _current.set(acct)
    try:
        yield acct
    finally:
        _current.reset(reset)


@contextlib.contextmanager
def waiting_at_most(seconds: float) -> Iterator[None]:
    """Inside it the call's upstream waits end after `seconds`, or at the call's own deadline when
    that comes first: for a read the catalog can answer instead, so a hung upstream costs that
    long, not the whole call. Outside a call scope it changes nothing."""
    acct = _current.get()
    if acct is None:
        yield
        return
    saved = acct.deadline_s, acct.deadline_at
    at = time.monotonic() + seconds
    if acct.deadline_at is None or at < acct.deadline_at:
        acct.deadline_s, acct.deadline_at = seconds, at
    try:
        yield
    finally:
        acct.deadline_s, acct.deadline_at = saved
