"""Token buckets that keep us under NEON's rate limits, one per identity.

NEON limits per IP when anonymous and per token otherwise (spec: 200 burst / 2 per s, and
2000 / 8 per s); `eco.rate_limit.*` holds our budget, 10 % under those. Two implementations
with one interface:

- `LocalBuckets`: in-process, with an injectable clock (tests drive it without sleeping).
- `RedisBuckets`: the bucket lives in Redis and is updated by one Lua script per take, so any
  number of processes (web workers, Celery) share one budget. Time comes from the Redis
  server (`TIME`), so processes with skewed clocks still agree. While Redis is unreachable
  (`upstream.redis_link`) it takes from a `LocalBuckets` of the process instead, each identity's
  budget divided by `eco.rate_limit.processes`: that many processes spending their share at once
  stay within the whole budget. When Redis answers again the shared bucket is used again (NEON's
  headers then fold in what the processes spent meanwhile, as they do after a restart).

`take()` never sleeps: it returns 0 when a request may go now, else the seconds to wait.
`observe()` folds in what NEON's `x-ratelimit-*` headers said, which are authoritative: our
local count can drift (other clients on the same IP, restarts), theirs cannot. It only ever
lowers our count (raising it would spend the 10 % margin), and at `low_water` or below it
holds the identity for `hold_s` (the caller derives it from NEON's reset; a 429's wait).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from eco_core.config import RateLimit
from upstream.redis_link import RedisLink, redis_errors

# NEON's limit header for anonymous callers; a token that NEON did not recognise gets it too.
ANONYMOUS_UPSTREAM_LIMIT = 200


@dataclass(frozen=True)
class Budget:
    capacity: float
    rate: float


def budget_for(cfg: RateLimit, *, with_token: bool, upstream_limit: int | None = None) -> Budget:
    """Our budget for one identity; shrinks when NEON's own limit header says it is smaller
    than we assumed (for example a token NEON did not recognise is limited like anonymous)."""
    capacity, rate = (
        (float(cfg.token_burst), cfg.token_rps) if with_token else (float(cfg.anonymous_burst), cfg.anonymous_rps)
    )
    if upstream_limit and upstream_limit * 0.9 < capacity:
        scale = upstream_limit * 0.9 / capacity
        capacity, rate = max(1.0, capacity * scale), rate * scale
    return Budget(float(capacity), float(rate))


@dataclass
class Headroom:
    """The last thing NEON told us about one identity, for `_meta` and eco_ping."""

    limit: int | None = None
    remaining: int | None = None
    reset_s: float | None = None
    seen_at: float | None = None


class Buckets(Protocol):
    @property
    def backend(self) -> str: ...

    async def take(self, identity: str, budget: Budget) -> float: ...

    async def observe(self, identity: str, budget: Budget, *, remaining: int, hold_s: float, low_water: int) -> None: ...

    async def level(self, identity: str, budget: Budget) -> float | None: ...


@dataclass
class _Bucket:
    tokens: float
    stamp: float
    blocked_until: float = 0.0


class LocalBuckets:
    backend = "local"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        # One instance serves every event loop of the process (Celery tasks, --check threads).
        self._lock = threading.Lock()

    def _refill(self, identity: str, budget: Budget) -> tuple[_Bucket, float]:
        now = self._clock()
        b = self._buckets.get(identity)
        if b is None:
            b = self._buckets[identity] = _Bucket(budget.capacity, now)
        b.tokens = min(budget.capacity, b.tokens + max(0.0, now - b.stamp) * budget.rate)
        b.stamp = now
        return b, now

    async def take(self, identity: str, budget: Budget) -> float:
        with self._lock:
            b, now = self._refill(identity, budget)
            if b.blocked_until > now:
                return b.blocked_until - now
            if b.tokens >= 1.0:
                b.tokens -= 1.0
                return 0.0
            return (1.0 - b.tokens) / budget.rate

    async def observe(self, identity: str, budget: Budget, *, remaining: int, hold_s: float, low_water: int) -> None:
        with self._lock:
            b, now = self._refill(identity, budget)
            b.tokens = min(b.tokens, float(max(0, remaining - low_water)))
            if remaining <= low_water:
                b.blocked_until = max(b.blocked_until, now + max(hold_s, 0.0))

    async def level(self, identity: str, budget: Budget) -> float | None:
        with self._lock:
            if identity not in self._buckets:
                return None
            b, _ = self._refill(identity, budget)
            return b.tokens


# KEYS[1] = bucket hash. ARGV = capacity, rate. Returns the wait in seconds, as a string
# (Lua numbers become integers in Redis replies).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'blocked')
local tokens = tonumber(h[1]) or cap
local ts = tonumber(h[2]) or now
local blocked = tonumber(h[3]) or 0
tokens = math.min(cap, tokens + math.max(0, now - ts) * rate)
local wait = 0
if blocked > now then
  wait = blocked - now
elseif tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now), 'blocked', tostring(blocked))
redis.call('EXPIRE', KEYS[1], math.ceil(cap / rate) + 60)
return tostring(wait)
"""

# ARGV = capacity, rate, remaining, hold seconds, low_water. A 429 is observed as remaining 0.
_OBSERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local cap = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local remaining = tonumber(ARGV[3])
local hold = tonumber(ARGV[4])
local low = tonumber(ARGV[5])
local h = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'blocked')
local tokens = tonumber(h[1]) or cap
local ts = tonumber(h[2]) or now
local blocked = tonumber(h[3]) or 0
tokens = math.min(cap, tokens + math.max(0, now - ts) * rate)
tokens = math.min(tokens, math.max(0, remaining - low))
if remaining <= low then blocked = math.max(blocked, now + hold) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now), 'blocked', tostring(blocked))
redis.call('EXPIRE', KEYS[1], math.ceil(cap / rate) + 60)
return tostring(tokens)
"""


class RedisBuckets:
    def __init__(self, redis_client: Any, *, prefix: str = "eco:rl:", fallback: LocalBuckets | None = None,
                 processes: int = 1, link: RedisLink | None = None) -> None:
        # redis.asyncio.Redis; scripts are cached server-side by SHA after the first call (and
        # loaded again by redis-py when a restarted server no longer knows them).
        self._redis = redis_client
        self._prefix = prefix
        self._take = redis_client.register_script(_TAKE)
        self._observe = redis_client.register_script(_OBSERVE)
        # The process's own buckets (shared by its event loops), used while Redis is unreachable.
        self.fallback = fallback if fallback is not None else LocalBuckets()
        self.processes = processes
        self.link = link if link is not None else RedisLink("redis")

    @property
    def backend(self) -> str:
        return "local" if self.link.down else "redis"

    def share(self, budget: Budget) -> Budget:
        """This process's part of `budget` while Redis is away (at least one request of burst)."""
        return Budget(max(1.0, budget.capacity / self.processes), budget.rate / self.processes)

    def _key(self, identity: str) -> str:
        return self._prefix + identity

    async def take(self, identity: str, budget: Budget) -> float:
        ticket = self.link.attempt()
        if ticket is not None:
            try:
                wait = await self._take(keys=[self._key(identity)], args=[budget.capacity, budget.rate])
            except redis_errors() as exc:
                self.link.failed(ticket, exc, "rate_limit")
            else:
                self.link.ok(ticket)
                return float(wait)
        else:
            self.link.skipped("rate_limit")
        return await self.fallback.take(identity, self.share(budget))

    async def observe(self, identity: str, budget: Budget, *, remaining: int, hold_s: float, low_water: int) -> None:
        ticket = self.link.attempt()
        if ticket is not None:
            try:
                await self._observe(keys=[self._key(identity)],
                                    args=[budget.capacity, budget.rate, remaining, hold_s, low_water])
            except redis_errors() as exc:
                self.link.failed(ticket, exc, "rate_limit")
            else:
                self.link.ok(ticket)
                return
        else:
            self.link.skipped("rate_limit")
        await self.fallback.observe(identity, self.share(budget), remaining=remaining, hold_s=hold_s,
                                    low_water=low_water)

    async def level(self, identity: str, budget: Budget) -> float | None:
        ticket = self.link.attempt()
        if ticket is not None:
            try:
                raw = await self._redis.hget(self._key(identity), "tokens")
            except redis_errors() as exc:
                self.link.failed(ticket, exc, "rate_limit")
            else:
                self.link.ok(ticket)
                return None if raw is None else float(raw)
        return await self.fallback.level(identity, self.share(budget))

    async def aclose(self) -> None:
        await self._redis.aclose()


def retry_after_from(headers: Any, default: float) -> float:
    """NEON spells it `RetryAfter` (no hyphen); accept the standard spelling too."""
    for name in ("retryafter", "retry-after"):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value
    return default
