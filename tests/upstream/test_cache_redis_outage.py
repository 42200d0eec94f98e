"""The Redis-backed answer cache while its Redis is down: every lookup is a miss answered by the
fetch (never an error), writes are dropped, the dead server is tried at most once per
cache.redis_retry_s, one warning says so and one line says when it is back; then the cache is
used again. Against a redis-server of the test's own, killed and restarted."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator

import pytest
from django.core.cache.backends.redis import RedisCache
from prometheus_client import REGISTRY

from tests.own_redis import OwnRedis
from tests.upstream.conftest import FakeClock, make_cfg
from upstream.cache import UpstreamCache
from upstream.redis_link import RedisLink, cache_options, connect


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis().start()
    yield server
    server.kill()


def _metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "eco.upstream.redis" and r.levelno == level]


async def test_redis_cache_outage_answers_misses_without_error_and_the_cache_is_used_again_when_redis_returns(
        own_redis, caplog):
    caplog.set_level(logging.INFO, logger="eco.upstream.redis")
    cfg = make_cfg().cache
    prefix = f"eco-outage-{uuid.uuid4().hex[:8]}"
    clock = FakeClock()
    link = RedisLink("own", retry_s=1.0, clock=clock)
    conn = connect(own_redis.url, cfg)
    cache = UpstreamCache(cfg, backend=RedisCache(own_redis.url, {"KEY_PREFIX": prefix, "TIMEOUT": None,
                                                                  "OPTIONS": cache_options(cfg)}),
                          redis_client=conn, link=link)
    fetched: list[int] = []

    async def fetch() -> dict:
        fetched.append(1)
        return {"n": len(fetched)}

    before = {r: _metric("eco_upstream_cache_lookups_total", result=r) for r in ("hit", "miss")}
    skipped = _metric("eco_redis_skipped_total", use="cache")
    try:
        assert (await cache.get_or_fetch("k", 60, fetch)).hit is False
        assert (await cache.get_or_fetch("k", 60, fetch)).hit is True
        assert len(fetched) == 1 and any(k.startswith(prefix) for k in own_redis.keys())

        own_redis.kill()
        down = [await cache.get_or_fetch("k", 60, fetch) for _ in range(5)]
        assert [(d.hit, d.value) for d in down] == [(False, {"n": n}) for n in range(2, 7)]
        assert link.down and link.failures == 1, "the dead server was asked again before cache.redis_retry_s"
        assert _metric("eco_upstream_cache_lookups_total", result="miss") - before["miss"] == 6
        assert _metric("eco_redis_skipped_total", use="cache") - skipped == 10  # 5 reads and 5 writes
        assert _metric("eco_redis_unavailable") == 1

        own_redis.restart()  # empty, as a cache-only Redis is after a crash
        clock.now += 1.0  # the next use probes
        assert (await cache.get_or_fetch("k", 60, fetch)).hit is False
        assert not link.down and link.failures == 1, "a pooled connection failed after Redis came back"
        assert any(k.startswith(prefix) for k in own_redis.keys()), "nothing written to Redis again"
        again = await cache.get_or_fetch("k", 60, fetch)
        assert again.hit is True and again.value == {"n": 7}
        assert _metric("eco_upstream_cache_lookups_total", result="hit") - before["hit"] == 2
        assert _metric("eco_redis_unavailable") == 0
    finally:
        await conn.aclose()
    assert len(_records(caplog, logging.WARNING)) == 1, _records(caplog, logging.WARNING)
    assert len(_records(caplog, logging.INFO)) == 1, _records(caplog, logging.INFO)


async def test_a_hung_redis_costs_one_bounded_timeout_then_is_skipped_until_a_probe_finds_it_answering(
        own_redis, caplog):
    caplog.set_level(logging.INFO, logger="eco.upstream.redis")
    cfg = make_cfg({"ECO_MCP_CACHE__REDIS_TIMEOUT_S": "0.3"}).cache
    clock = FakeClock()
    link = RedisLink("own", retry_s=1.0, clock=clock)
    conn = connect(own_redis.url, cfg)
    cache = UpstreamCache(cfg, backend=RedisCache(own_redis.url, {"KEY_PREFIX": f"eco-hung-{uuid.uuid4().hex[:8]}",
                                                                  "TIMEOUT": None, "OPTIONS": cache_options(cfg)}),
                          redis_client=conn, link=link)

    async def fetch() -> str:
        return "fresh"

    try:
        assert (await cache.get_or_fetch("k", 60, fetch)).hit is False
        own_redis.pause()  # accepts connections, answers nothing
        # Bounded: the first lookup waits out one timeout, the others do not ask the hung server.
        async with asyncio.timeout(10):
            down = [await cache.get_or_fetch("k", 60, fetch) for _ in range(5)]
        assert [(d.hit, d.value) for d in down] == [(False, "fresh")] * 5
        assert link.down and link.failures == 1
        own_redis.resume()
        clock.now += 1.0
        assert (await cache.get_or_fetch("k", 60, fetch)).hit is True  # the entry written before the pause
        assert not link.down and link.failures == 1
    finally:
        own_redis.resume()
        await conn.aclose()
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                  and r.name == "eco.upstream.redis"]
    assert "TimeoutError" in warning
