"""The upstream answer cache, on Django's cache framework (spec: Limits, `cache.*`).

Backend: the same kind as Django's default cache (in-process LocMem, or Redis when REDIS_URL is
set), but a separate instance with its own key prefix and `max_entries = cache.max_entries`.
LocMem culls by itself; Redis does not, so there an index (a sorted set of our keys by write
time) evicts the oldest entries beyond the cap.

One lookup, `get_or_fetch(key, ttl, fetch)`:
- fresh hit: served from cache; in the last `cache.refresh_ahead` fraction of the TTL a
  background refresh is started so hot keys never go cold;
- miss: one `fetch()` per key at a time in this process (single-flight): concurrent callers of
  a cold key wait for the first one's answer instead of asking upstream themselves;
- fetch fails with a retryable error (5xx, unreachable, rate limited) and an expired entry is
  younger than TTL + `cache.stale_if_error_s`: the stale value is served, flagged `stale`.

Redis unreachable (`upstream.redis_link`): the cache is skipped, never an error. A read answers a
miss (the upstream is asked, single-flight still holds) and a write is dropped; at most one use
per `cache.redis_retry_s` probes whether Redis is back.

`get_or_fetch(..., fresh=True)` is for a reader that must see the upstream as it is now (the
catalog refresh): it never answers from the cache, fresh or stale, so an upstream failure
reaches it; the answer it gets is still stored for everyone else.

Entries outlive their TTL by `stale_if_error_s` for that last reason.

Counting entries uses only public cache APIs: on Redis a sorted set indexes our keys (above); on
LocMem a registry of the keys written to each named store (shared by every client of the process
that uses that store) is checked with `has_key`, which also drops keys LocMem culled or expired. Values are whatever
`fetch()` returns (the client stores validated raw bodies) and must be picklable.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache.backends.base import BaseCache
from django.utils.module_loading import import_string

from eco_core import metrics
from eco_core.config import Cache as CacheSettings
from eco_core.errors import EcoError
from upstream.redis_link import RedisLink, cache_options, redis_errors

log = logging.getLogger("eco.upstream.cache")

LOCMEM_NAME = "eco-upstream-client"

# LocMem store name -> keys written to it, and backend object -> its store name (see the module
# docstring): LocMemCache instances with the same name share one store, so they share a registry.
_locmem_keys: dict[str, set[str]] = {}
# Bodies from this size on are stored compressed in LocMem (JSON shrinks several times): there
# the store is the serving process's own memory, where a catalog build's answers (the subtree
# walk's 81 site subtrees, the realm's hierarchy) stay for the TTL. A hit pays the decompression,
# far less than the parse that follows it; large ones are (de)compressed off the event loop.
PACK_FROM = 8 * 1024
PACK_IN_THREAD_FROM = 256 * 1024
_store_names: weakref.WeakKeyDictionary[BaseCache, str] = weakref.WeakKeyDictionary()


@dataclass
class Lookup:
    value: Any
    hit: bool
    stale: bool = False
    age_s: float = 0.0


def build_backend(max_entries: int, cfg: CacheSettings | None = None) -> BaseCache:
    """A cache like Django's default one, with our own prefix and entry cap (and, on Redis, the
    connection options of `redis_link.cache_options`)."""
    conf = dict(settings.CACHES["default"])
    backend_cls = import_string(conf["BACKEND"])
    params = {k: v for k, v in conf.items() if k not in {"BACKEND", "LOCATION"}}
    params["KEY_PREFIX"] = _key_prefix()
    params["TIMEOUT"] = None
    params["max_entries"] = max_entries
    options = dict(conf.get("OPTIONS") or {})
    options.pop("MAX_ENTRIES", None)
    is_locmem = "locmem" in conf["BACKEND"].lower()
    if "redis" in conf["BACKEND"].lower() and cfg is not None:
        options = {**cache_options(cfg), **options}
    params["OPTIONS"] = options
    location = LOCMEM_NAME if is_locmem else conf.get("LOCATION", "")
    backend: BaseCache = backend_cls(location, params)
    if is_locmem:
        _store_names[backend] = location
    return backend


_sync_clients: dict[str, Any] = {}


def shared_entries(url: str, cfg: CacheSettings) -> int | None:
    """Entries the shared Redis cache at `url` holds now, every process's (the size of the index
    that caps them), or None while Redis does not answer. Synchronous, for the admin and the ops
    API: what one process counted as it wrote says nothing of the others' entries."""
    from upstream.redis_link import link_for

    link = link_for(url, cfg)
    ticket = link.attempt()
    if ticket is None:
        link.skipped("cache")
        return None
    try:
        client = _sync_clients.get(url)
        if client is None:
            import redis

            client = _sync_clients[url] = redis.Redis.from_url(url, **cache_options(cfg))
        count = int(client.zcard(f"{_key_prefix()}:index"))
    except redis_errors() as exc:
        link.failed(ticket, exc, "cache")
        return None
    link.ok(ticket)
    return min(count, cfg.max_entries)


def _key_prefix() -> str:
    return f"{settings.CACHES['default'].get('KEY_PREFIX') or 'eco'}:up"


def locmem_written_keys() -> dict[str, list[str]]:
    """Per named LocMem store, the keys this process wrote to it (some may be culled or expired
    since): an audit, such as the test suite's canary sweep, reads each back with the store's
    public `get` (a backend from `locmem_backend` with the same name) instead of LocMem's private
    dictionary."""
    # set.copy() is one step under the GIL: the event loop may be adding keys meanwhile.
    return {name: sorted(keys.copy()) for name, keys in list(_locmem_keys.items())}


def locmem_backend(max_entries: int, name: str = LOCMEM_NAME) -> BaseCache:
    """An in-process backend whatever Django's default is (unit tests, benchmarks)."""
    from django.core.cache.backends.locmem import LocMemCache

    backend = LocMemCache(name, {"TIMEOUT": None, "max_entries": max_entries, "KEY_PREFIX": "eco:up"})
    _store_names[backend] = name
    return backend


class UpstreamCache:
    def __init__(
        self,
        cfg: CacheSettings,
        *,
        backend: BaseCache | None = None,
        redis_client: Any = None,
        link: RedisLink | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._cfg = cfg
        self._backend = backend if backend is not None else build_backend(cfg.max_entries, cfg)
        self._redis = redis_client if self.backend_name == "redis" else None
        # Whether Redis is reachable, shared with the rate limit of the same server (see above).
        self._link = (link or RedisLink("redis", retry_s=cfg.redis_retry_s)) if self.backend_name == "redis" else None
        self._index_key = f"{self._backend.key_prefix or 'eco:up'}:index"
        self._clock = clock
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._refreshing: set[asyncio.Task[Any]] = set()
        self.hits = 0
        self.misses = 0
        self._redis_entries: int | None = None
        store = _store_names.get(self._backend)
        # A LocMem backend built elsewhere (not by the two functions above) counts its own writes.
        self._keys: set[str] = _locmem_keys.setdefault(store, set()) if store is not None else set()

    @property
    def enabled(self) -> bool:
        return self._cfg.enabled

    @property
    def backend_name(self) -> str:
        return "redis" if "redis" in type(self._backend).__module__ else "locmem"

    # ------------------------------------------------------------------ lookup
    async def get_or_fetch(self, key: str, ttl: float, fetch: Callable[[], Awaitable[Any]], *,
                           fresh: bool = False) -> Lookup:
        if not self.enabled:
            return Lookup(await fetch(), hit=False)
        if fresh:
            # Joining a fetch already in flight is still an answer the upstream gives now.
            value, led = await self._single_flight(key, ttl, fetch)
            if led:
                self.misses += 1
                metrics.cache_lookup("miss")
            else:
                self.hits += 1
                metrics.cache_lookup("hit")
            return Lookup(value, hit=not led)
        entry = await self._read(key)
        now = self._clock()
        age = now - entry["t"] if entry else 0.0
        if entry and age < ttl:
            self.hits += 1
            metrics.cache_lookup("hit")
            if self._cfg.refresh_ahead and age >= ttl * (1 - self._cfg.refresh_ahead):
                self._refresh_in_background(key, ttl, fetch)
            return Lookup(entry["v"], hit=True, age_s=age)
        try:
            value, led = await self._single_flight(key, ttl, fetch)
        except EcoError as exc:
            if entry and exc.retryable and age < ttl + self._cfg.stale_if_error_s:
                self.hits += 1
                metrics.cache_lookup("stale")
                log.warning("serving a stale answer (%.0f s old) because upstream failed: %s", age, exc.code)
                return Lookup(entry["v"], hit=True, stale=True, age_s=age)
            self.misses += 1
            metrics.cache_lookup("miss")
            raise
        if led:
            self.misses += 1
            metrics.cache_lookup("miss")
        else:
            self.hits += 1
            metrics.cache_lookup("hit")
        return Lookup(value, hit=not led)

    async def _single_flight(self, key: str, ttl: float, fetch: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """(value, True) for the caller that fetched, (value, False) for those that waited."""
        while (waiting := self._inflight.get(key)) is not None:
            try:
                return await asyncio.shield(waiting), False
            except asyncio.CancelledError:
                # The fetching caller was cancelled (its client went away), not us: take over.
                task = asyncio.current_task()
                if not waiting.cancelled() or (task is not None and task.cancelling()):
                    raise
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            value = await fetch()
            await self.put(key, ttl, value)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: nobody else may be waiting
            raise
        finally:
            if self._inflight.get(key) is future:
                del self._inflight[key]
        future.set_result(value)
        return value, True

    def _refresh_in_background(self, key: str, ttl: float, fetch: Callable[[], Awaitable[Any]]) -> None:
        if key in self._inflight:
            return

        async def refresh() -> None:
            try:
                await self._single_flight(key, ttl, fetch)
            except Exception as exc:  # the cached answer is still fresh; try again next hit
                log.info("refresh-ahead failed: %s", getattr(exc, "code", type(exc).__name__))

        task = asyncio.get_running_loop().create_task(refresh())
        self._refreshing.add(task)
        task.add_done_callback(self._refreshing.discard)

    # ------------------------------------------------------------------ storage
    async def _read(self, key: str) -> Any:
        if self._link is None:
            return await _unpacked(await self._backend.aget(key))
        ticket = self._link.attempt()
        if ticket is None:
            self._link.skipped("cache")
            return None
        try:
            entry = await self._backend.aget(key)
        except redis_errors() as exc:
            self._link.failed(ticket, exc, "cache")
            return None
        self._link.ok(ticket)
        return await _unpacked(entry)

    async def put(self, key: str, ttl: float, value: Any) -> None:
        keep = int(ttl + self._cfg.stale_if_error_s) + 1
        # Packed in-process only: a shared store's memory is not this process's.
        entry = await _packed(value, self._clock(), pack=self.backend_name == "locmem")
        if self._link is not None:
            ticket = self._link.attempt()
            if ticket is None:
                self._link.skipped("cache")
                return
            try:
                await self._backend.aset(key, entry, timeout=keep)
                if self._redis is not None:
                    await self._index_and_evict(self._redis, key)
            except redis_errors() as exc:
                self._link.failed(ticket, exc, "cache")
                return
            self._link.ok(ticket)
            return
        await self._backend.aset(key, entry, timeout=keep)
        if self.backend_name == "locmem":
            self._keys.add(key)
            if len(self._keys) > 2 * self._cfg.max_entries:
                self._forget_gone_keys()  # LocMem culled some: keep the registry near the cap

    def _forget_gone_keys(self) -> None:
        # Iterate a snapshot and remove in one call: another thread (admin, /readyz) may count
        # while the event loop writes.
        gone = [k for k in list(self._keys) if not self._backend.has_key(k)]
        self._keys.difference_update(gone)

    async def _index_and_evict(self, redis: Any, key: str) -> None:
        # Redis keeps no count of a prefix's keys, so a sorted set indexes ours for max_entries.
        await redis.zadd(self._index_key, {key: self._clock()})
        count = int(await redis.zcard(self._index_key))
        self._redis_entries = min(count, self._cfg.max_entries)
        extra = count - self._cfg.max_entries
        if extra > 0:
            oldest = await redis.zpopmin(self._index_key, extra)
            await self._backend.adelete_many([k.decode() if isinstance(k, bytes) else k for k, _ in oldest])

    def entries(self) -> int | None:
        """Entries now (LocMem), or as last counted by this process (Redis, shared)."""
        if self._redis is not None:
            return self._redis_entries
        if self.backend_name != "locmem":
            return None
        self._forget_gone_keys()
        return len(self._keys)

    async def clear(self) -> None:
        """Forget our entries. On Redis only indexed keys go: never FLUSHDB a shared server."""
        if self.backend_name == "locmem":
            await self._backend.aclear()
            self._keys.clear()
        elif self._redis is not None:
            await self._clear_indexed(self._redis)
        self.hits = self.misses = 0

    async def _clear_indexed(self, redis: Any) -> None:
        keys = await redis.zrange(self._index_key, 0, -1)
        if keys:
            await self._backend.adelete_many([k.decode() if isinstance(k, bytes) else k for k in keys])
        await redis.delete(self._index_key)
        self._redis_entries = 0

    async def drain(self) -> None:
        """Wait for background refreshes (tests, shutdown)."""
        while self._refreshing:
            await asyncio.gather(*list(self._refreshing), return_exceptions=True)

    def info(self) -> dict[str, Any]:
        total = self.hits + self.misses
        return {
            "backend": self.backend_name,
            "enabled": self.enabled,
            "entries": self.entries(),
            "maxEntries": self._cfg.max_entries,
            "hits": self.hits,
            "misses": self.misses,
            "hitRate": round(self.hits / total, 4) if total else None,
        }


async def _packed(value: Any, t: float, *, pack: bool) -> dict[str, Any]:
    """The stored entry: {"v": value, "t": t}, or {"z": compressed body, "t": t} for a large body."""
    if not pack or not isinstance(value, bytes) or len(value) < PACK_FROM:
        return {"v": value, "t": t}
    if len(value) < PACK_IN_THREAD_FROM:
        return {"z": zlib.compress(value, 1), "t": t}
    return {"z": await asyncio.to_thread(zlib.compress, value, 1), "t": t}


def unpacked(entry: Any) -> Any:
    """A stored entry as {"v": value, "t": t}, whether `_packed` compressed it or not."""
    if not isinstance(entry, dict) or "z" not in entry:
        return entry
    return {"v": zlib.decompress(entry["z"]), "t": entry["t"]}


async def _unpacked(entry: Any) -> Any:
    # A packed body of this size is about 4 times as large once decompressed.
    if isinstance(entry, dict) and "z" in entry and len(entry["z"]) >= PACK_IN_THREAD_FROM // 4:
        return await asyncio.to_thread(unpacked, entry)
    return unpacked(entry)
