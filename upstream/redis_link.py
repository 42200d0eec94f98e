"""Redis as this process sees it, and the Redis clients the upstream package builds.

Redis holds nothing a call cannot do without: the upstream answer cache (a miss costs one
upstream request) and the shared rate-limit bucket (each process can keep its own share of the
budget for a while). So an outage degrades calls instead of failing them, and `RedisLink`
decides, per Redis server, whether a use goes to Redis at all:

- up: every use goes to Redis. The first use that fails (connection refused, timeout, any Redis
  error) marks it down: ONE warning line, `eco_redis_outages_total` + 1, `eco_redis_unavailable`
  set to 1. Uses then skip Redis (`eco_redis_skipped_total{use}`): the cache answers a miss, the
  rate limit takes from the process's own bucket.
- down: at most one use per `cache.redis_retry_s` is let through as a probe (a real use, so its
  success is what counts), so a dead server is not asked on every call; the others skip it
  without touching the network. The first probe that succeeds marks it up again: one info line.

Each use carries the ticket `attempt()` gave it; a result from an earlier period (a use started
before the outage was noticed and finishing after, a slow probe overtaken by a faster one) is
ignored, so one outage is one warning and one recovery line however many uses were in flight.

The clients (`connect()` for asyncio, `cache_options()` for Django's cache) have bounded timeouts,
so a server that does not answer at all costs at most `cache.redis_timeout_s` per probe (Django's
cache runs its commands on the thread the catalog's database reads share, so a long stall there
stalls those too), and one immediate retry on a connection error, not on a timeout, so a pooled
connection the server dropped while it was away is replaced on its first use instead of failing it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlparse

from eco_core import metrics
from eco_core.config import Cache as CacheSettings

log = logging.getLogger("eco.upstream.redis")

Use = Literal["cache", "rate_limit"]


@functools.cache
def redis_errors() -> tuple[type[BaseException], ...]:
    """What a Redis use raises when Redis is unreachable or unwell (socket errors included)."""
    from redis.exceptions import RedisError

    return (RedisError, OSError)


def describe(url: str) -> str:
    """host:port/db of a Redis URL: never its password."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        return parsed.path or "unix socket"
    return f"{parsed.hostname or '127.0.0.1'}:{parsed.port or 6379}{parsed.path or '/0'}"


class RedisLink:
    def __init__(self, name: str, *, retry_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.retry_s = retry_s
        self._clock = clock
        self._lock = threading.Lock()  # uses come from every event loop and cache thread of the process
        self._down_since: float | None = None
        self._next_probe = 0.0
        self._period = 0  # + 1 at every change between up and down
        self.outages = 0
        self.failures = 0  # failed uses, counted whatever their period

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def attempt(self) -> int | None:
        """A ticket for one use of Redis, or None: skip Redis this time (it is down and the next
        probe is not due)."""
        with self._lock:
            if self._down_since is None:
                return self._period
            now = self._clock()
            if now < self._next_probe:
                return None
            self._next_probe = now + self.retry_s
            return self._period

    def skipped(self, use: Use) -> None:
        metrics.redis_skipped(use)

    def failed(self, ticket: int, exc: BaseException, use: Use) -> None:
        """The use with `ticket` failed on Redis; the caller goes on without it."""
        metrics.redis_skipped(use)
        with self._lock:
            self.failures += 1
            if ticket != self._period:
                return  # started in an earlier period: says nothing about this one
            self._next_probe = self._clock() + self.retry_s
            if self._down_since is not None:
                return  # a probe failed: still down
            self._down_since = self._clock()
            self._period += 1
            self.outages += 1
        metrics.redis_outage(True)
        log.warning("Redis at %s is unreachable (%s on a %s use): the upstream answer cache is skipped and the "
                    "rate limit is this process's share of the budget until it answers again (tried again at "
                    "most every %.1f s)", self.name, type(exc).__name__, use.replace("_", "-"), self.retry_s)

    def ok(self, ticket: int) -> None:
        """The use with `ticket` succeeded: a probe that did ends the outage."""
        if self._down_since is None:
            return
        with self._lock:
            since = self._down_since
            if since is None or ticket != self._period:
                return
            self._down_since = None
            self._period += 1
        metrics.redis_outage(False)
        log.info("Redis at %s is back after %.1f s: the shared answer cache and rate limit are in use again",
                 self.name, self._clock() - since)


# One link per Redis URL in the process: every client of every event loop, the cache and the
# rate limit agree on whether it is down, so an outage is one warning however they use it.
_links: dict[str, RedisLink] = {}
_links_lock = threading.Lock()


def link_for(url: str, cfg: CacheSettings) -> RedisLink:
    with _links_lock:
        link = _links.get(url)
        if link is None:
            link = _links[url] = RedisLink(describe(url), retry_s=cfg.redis_retry_s)
        link.retry_s = cfg.redis_retry_s  # the active configuration's
        return link


def connect(url: str, cfg: CacheSettings) -> Any:
    """An asyncio Redis client (redis.asyncio.Redis) for one event loop; see the module docstring."""
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    return aioredis.from_url(url, socket_connect_timeout=cfg.redis_timeout_s, socket_timeout=cfg.redis_timeout_s,
                             retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)))


def cache_options(cfg: CacheSettings) -> dict[str, Any]:
    """Connection options for Django's Redis cache backend (its OPTIONS); see the module docstring."""
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.retry import Retry

    return {"socket_connect_timeout": cfg.redis_timeout_s, "socket_timeout": cfg.redis_timeout_s,
            "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))}
