"""The GraphQL circuit breaker (spec: States, 'GraphQL breaker').

    closed --(eco.graphql_breaker_failures consecutive failures)--> open
    open   --(graphql_breaker_cooldown_s elapsed)--> closed, on probation
    probation: the next GraphQL call is a trial; success clears the count, a failure
               re-opens at once (one failure, not N, because the last N already failed).

While open, callers skip GraphQL and use REST; `eco_ping` and `/readyz` show `degraded`.
The breaker is per process: each process learns about an outage from its own requests,
which costs at most `graphql_breaker_failures` failed requests per process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


class GraphQLBreaker:
    def __init__(self, *, failures: int, cooldown_s: float, clock: Callable[[], float] = time.time) -> None:
        self._threshold = failures
        self._cooldown = cooldown_s
        self._clock = clock
        self._consecutive = 0
        self._open_until: float | None = None
        self._lock = threading.Lock()  # shared by every event loop of the process

    def _expire(self) -> None:
        if self._open_until is not None and self._clock() >= self._open_until:
            self._open_until = None
            self._consecutive = self._threshold - 1  # probation

    @property
    def is_open(self) -> bool:
        with self._lock:
            self._expire()
            return self._open_until is not None

    def record_success(self) -> None:
        with self._lock:
            self._expire()
            self._consecutive = 0

    def record_failure(self) -> None:
        with self._lock:
            self._expire()
            self._consecutive += 1
            if self._consecutive >= self._threshold and self._open_until is None:
                self._open_until = self._clock() + self._cooldown

    def state(self) -> dict[str, Any]:
        with self._lock:
            self._expire()
        open_until = None
        if self._open_until is not None:
            open_until = datetime.fromtimestamp(self._open_until, UTC).isoformat().replace("+00:00", "Z")
        return {
            "state": "open" if self._open_until is not None else "closed",
            "consecutiveFailures": self._consecutive,
            "openUntil": open_until,
            "threshold": self._threshold,
            "cooldownSeconds": self._cooldown,
        }
