"""The shared (Redis) rate-limit bucket while its Redis is down: the process falls back to a bucket
of its own holding its share of the budget (1/eco.rate_limit.processes), tries the dead server at
most once per cache.redis_retry_s, says so in one warning, and goes back to the shared bucket
when Redis answers again. Against a redis-server of the test's own, killed and restarted."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.own_redis import OwnRedis
from tests.upstream.conftest import FakeClock, make_cfg
from upstream.ratelimit import Budget, LocalBuckets, RedisBuckets
from upstream.redis_link import RedisLink, connect

KEY = "eco:rl:outage:anonymous"


@pytest.fixture
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis().start()
    yield server
    server.kill()


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "eco.upstream.redis" and r.levelno == level]


async def test_rate_limit_takes_the_process_share_from_its_own_bucket_while_redis_is_down_then_the_shared_one(
        own_redis, caplog):
    caplog.set_level(logging.INFO, logger="eco.upstream.redis")
    cfg = make_cfg()
    clock = FakeClock()
    local = LocalBuckets(clock)
    link = RedisLink("own", retry_s=1.0, clock=clock)
    conn = connect(own_redis.url, cfg.cache)
    buckets = RedisBuckets(conn, prefix="eco:rl:outage:", fallback=local, processes=4, link=link)
    sent: list[int] = []  # each script run that went to Redis
    real_take = buckets._take

    async def counted_take(**kw):
        sent.append(1)
        return await real_take(**kw)

    buckets._take = counted_take
    budget = Budget(capacity=20, rate=2.0)
    try:
        # Up: the shared bucket in Redis is the one spent.
        assert await buckets.take("anonymous", budget) == 0
        assert float(own_redis.client().hget(KEY, "tokens")) == pytest.approx(19, abs=0.1)
        assert buckets.backend == "redis" and await local.level("anonymous", budget) is None

        own_redis.kill()
        # Down: this process's share, a quarter of the burst (5) and of the rate (0.5 per s).
        assert buckets.share(budget) == Budget(5.0, 0.5)
        waits = [await buckets.take("anonymous", budget) for _ in range(8)]
        assert waits[:5] == [0.0] * 5, waits
        assert waits[5:] == [pytest.approx(2.0)] * 3, waits  # one token back at 0.5 per s
        assert buckets.backend == "local"
        assert len(sent) - 1 == 1, "the dead server was asked again before cache.redis_retry_s passed"
        # NEON's headers lower the process's own bucket while Redis is away.
        await buckets.observe("anonymous", budget, remaining=3, hold_s=0.0, low_water=5)
        assert await buckets.level("anonymous", budget) == 0.0

        clock.now += 1.0  # a probe is due: one more try, still down; half a token back
        assert await buckets.take("anonymous", budget) == pytest.approx(1.0)
        assert len(sent) - 1 == 2
        clock.now += 0.5
        assert await buckets.take("anonymous", budget) == pytest.approx(0.5)
        assert len(sent) - 1 == 2, "a probe within cache.redis_retry_s of the last one"

        own_redis.restart()  # empty: the shared bucket starts full again
        assert await buckets.take("anonymous", budget) == pytest.approx(0.5), "probe not due yet: still local"
        clock.now += 1.0
        assert await buckets.take("anonymous", budget) == 0.0
        assert buckets.backend == "redis"
        assert float(own_redis.client().hget(KEY, "tokens")) == pytest.approx(19, abs=0.1)
        for _ in range(3):
            assert await buckets.take("anonymous", budget) == 0.0
        assert float(own_redis.client().hget(KEY, "tokens")) == pytest.approx(16, abs=0.1)
        assert await local.level("anonymous", buckets.share(budget)) == pytest.approx(1.25), "local bucket left alone"
        assert link.failures == 2 and link.outages == 1
    finally:
        await conn.aclose()
    assert len(_records(caplog, logging.WARNING)) == 1, _records(caplog, logging.WARNING)
    (back,) = _records(caplog, logging.INFO)
    assert "back" in back


async def test_the_client_sizes_the_fallback_from_eco_rate_limit_processes_and_shares_the_process_buckets(
        own_redis, settings):
    from upstream.client import UpstreamClient

    settings.REDIS_URL = own_redis.url
    cfg = make_cfg({"ECO_MCP_ECO__RATE_LIMIT__PROCESSES": "3"})
    process_buckets = LocalBuckets()
    client = UpstreamClient(cfg, local_buckets=process_buckets)
    try:
        limiter = client.ratelimiter
        assert isinstance(limiter, RedisBuckets)
        assert limiter.fallback is process_buckets and limiter.processes == 3
        assert limiter.share(Budget(180, 1.8)) == Budget(60.0, 0.6)
        assert limiter.share(Budget(2, 0.3)) == Budget(1.0, pytest.approx(0.1)), "never less than one request of burst"
    finally:
        await client.aclose()
