"""Per-call context shared by the gateway (which sets it) and the upstream client (which reads
and fills it), carried in context variables so no function signature has to thread it through.

    with call_scope(token=caller_token, token_source="request") as acct:
        ... any number of upstream calls ...
    acct.to_meta()   # -> the result `_meta["io.eco-mcp/upstream"]`
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from eco_service.redact import register_secret, token_hash

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
def call_scope(*, token: str | None = None, token_source: TokenSource = "none") -> Iterator[Accounting]:
    register_secret(token)
    acct = Accounting(token=token, token_source=token_source if token else "none")
    reset = _current.set(acct)
    try:
        yield acct
    finally:
        _current.reset(reset)
