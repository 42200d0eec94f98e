"""Token buckets like NEON's: per client IP when anonymous, per token when one is valid."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from threading import Lock


@dataclass
class Limits:
    anon_burst: int = 200
    anon_rps: float = 2.0
    token_burst: int = 2000
    token_rps: float = 8.0

    def scaled(self, scale: float) -> Limits:
        return Limits(max(1, round(self.anon_burst * scale)), self.anon_rps * scale,
                      max(1, round(self.token_burst * scale)), self.token_rps * scale)


@dataclass
class Bucket:
    capacity: int
    rate: float
    tokens: float
    stamp: float


@dataclass
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the bucket is full again
    retry_after: int = 0


@dataclass
class RateLimiter:
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    _buckets: dict = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def take(self, key: str, with_token: bool) -> Decision:
        cap, rate = ((self.limits.token_burst, self.limits.token_rps) if with_token
                     else (self.limits.anon_burst, self.limits.anon_rps))
        now = self.clock()
        with self._lock:
            b = self._buckets.get(key)
            if b is None:
                b = self._buckets[key] = Bucket(cap, rate, float(cap), now)
            b.tokens = min(b.capacity, b.tokens + (now - b.stamp) * b.rate)
            b.stamp = now
            allowed = b.tokens >= 1
            if allowed:
                b.tokens -= 1
            reset = math.ceil((b.capacity - b.tokens) / b.rate) if b.tokens < b.capacity else 0
            retry = 0 if allowed else max(1, math.ceil((1 - b.tokens) / b.rate))
            return Decision(allowed, cap, int(b.tokens), max(reset, 1) if not allowed else reset, retry)

    def reset(self) -> None:
        with self._lock:
            self._buckets.clear()
