"""Rate limits: a bucket per identity 10 % under NEON's limits, corrected by every reply's
x-ratelimit-* headers, waiting when allowed and answering rate_limited when not; with Redis
several processes share one budget."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from eco_core.errors import EcoError
from upstream.context import call_scope
from upstream.ratelimit import Budget, LocalBuckets, RedisBuckets

from .conftest import make_cfg, reply, sample

ROOT = Path(__file__).resolve().parents[2]
SITE = "sites_ABBY.json"


def _handler(headers: dict[str, str] | None = None, seen: list | None = None):
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return reply(200, sample(SITE), {"x-ratelimit-remaining": "150", **(headers or {})})

    return handle


def _small_budget(**extra: str):
    return make_cfg({"ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_BURST": "3", "ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_RPS": "2",
                     **extra})


async def test_burst_goes_at_once_then_requests_are_paced_at_the_sustained_rate(client_factory, clock):
    client = client_factory(_handler(), cfg=_small_budget(ECO_MCP_CACHE__ENABLED="false"))
    for _ in range(5):
        await client.site("ABBY")
    assert clock.sleeps == [0.5, 0.5]


async def test_wait_longer_than_max_wait_gives_rate_limited_before_any_request(client_factory, clock):
    seen: list = []
    cfg = _small_budget(ECO_MCP_CACHE__ENABLED="false", ECO_MCP_ECO__RATE_LIMIT__MAX_WAIT_S="0.2")
    client = client_factory(_handler(seen=seen), cfg=cfg)
    for _ in range(3):
        await client.site("ABBY")
    with pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "rate_limited" and caught.value.details["retryAfterSeconds"] == 1
    assert len(seen) == 3 and clock.sleeps == []


async def test_remaining_at_low_water_waits_until_upstream_refilled_past_it(client_factory, clock):
    client = client_factory(_handler({"x-ratelimit-remaining": "5", "x-ratelimit-reset": "98"}),
                            cfg=make_cfg({"ECO_MCP_CACHE__ENABLED": "false"}))
    await client.site("ABBY")
    await client.site("ABBY")
    assert clock.sleeps == [pytest.approx(1 / 1.8)]  # one token above low water at our 1.8/s


async def test_low_water_wait_never_exceeds_neons_reset(client_factory, clock):
    client = client_factory(_handler({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "2"}),
                            cfg=make_cfg({"ECO_MCP_CACHE__ENABLED": "false"}))
    await client.site("ABBY")
    await client.site("ABBY")
    assert clock.sleeps == [2.0]


async def test_upstream_remaining_lowers_our_count_but_never_raises_it(clock):
    buckets = LocalBuckets(clock)
    budget = Budget(capacity=180, rate=1.8)
    await buckets.take("anonymous", budget)
    await buckets.observe("anonymous", budget, remaining=12, hold_s=90, low_water=5)
    assert await buckets.level("anonymous", budget) == 7
    await buckets.observe("anonymous", budget, remaining=199, hold_s=0, low_water=5)
    assert await buckets.level("anonymous", budget) == 7


async def test_each_identity_has_its_own_bucket(client_factory, clock):
    client = client_factory(_handler(), cfg=_small_budget(ECO_MCP_CACHE__ENABLED="false"))
    for _ in range(3):
        await client.site("ABBY")
    with call_scope(token="a-token-of-some-caller-1234", token_source="request"):
        await client.site("ABBY")
    assert clock.sleeps == []


async def test_token_that_upstream_limits_like_anonymous_shrinks_its_budget(client_factory):
    client = client_factory(_handler({"x-ratelimit-limit": "200"}), cfg=make_cfg({"ECO_MCP_ECO__API_TOKEN": "x" * 20}))
    await client.site("ABBY")
    info = client.rate_limit_info()
    assert info["limit"] == 200 and info["budgetBurst"] == 180 and info["budgetPerSecond"] == pytest.approx(0.72)


async def test_429_without_retryafter_waits_the_configured_default(client_factory, clock):
    answers = [reply(429, b'{"message": "API rate limit exceeded"}', {"x-ratelimit-remaining": "0"}),
               reply(200, sample(SITE))]
    client = client_factory(lambda request: answers.pop(0), cfg=make_cfg({"ECO_MCP_ECO__RETRIES__RETRY_AFTER_DEFAULT_S": "2.5"}))
    await client.site("ABBY")
    assert clock.sleeps == [2.5]


# ---------------------------------------------------------------------------- Redis
@pytest.mark.redis
async def test_redis_bucket_hands_out_exactly_the_burst_to_concurrent_processes_clients(redis_url):
    import redis.asyncio as aioredis

    prefix = f"eco:test:rl:{uuid.uuid4().hex}:"
    conns = [aioredis.from_url(redis_url) for _ in range(2)]
    try:
        buckets = [RedisBuckets(c, prefix=prefix) for c in conns]
        budget = Budget(capacity=10, rate=0.001)
        waits = await asyncio.gather(*(buckets[i % 2].take("anonymous", budget) for i in range(30)))
        assert sum(1 for w in waits if w == 0) == 10
        assert all(w > 0 for w in waits if w != 0)
        await buckets[0].observe("anonymous", budget, remaining=3, hold_s=5, low_water=5)
        assert 4.0 < await buckets[1].take("anonymous", budget) <= 5.0
    finally:
        for c in conns:
            await c.aclose()


def _run_workers(sim, redis_url: str, buckets: str, *, seconds: float = 3.0) -> list[dict]:
    prefix = f"eco:test:rl:{uuid.uuid4().hex}:"
    env = {"PATH": "/usr/bin:/bin", "BURST": "18", "RPS": "4.5", "PYTHONPATH": str(ROOT), "REDIS_URL": ""}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.upstream.ratelimit_worker", sim.base_url,
                               str(seconds), buckets, redis_url, prefix], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:  # both set up (Django imported, client built) before either sends
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
    start_at = time.time() + 0.3
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(f"{start_at}\n")
        proc.stdin.flush()
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


@pytest.fixture(scope="module")
def small_sim():
    """NEON's limits scaled down: 20 burst, 5 per second (the workers budget 18 and 4.5)."""
    server_mod = pytest.importorskip("upstream_sim.server")
    with server_mod.SimServer(seed=1, port=0, anon_burst=20, anon_rps=5.0) as server:
        yield server


@pytest.fixture(scope="module")
def roomy_sim():
    """Limits far above the workers' budget, so only our own buckets can hold them back."""
    server_mod = pytest.importorskip("upstream_sim.server")
    with server_mod.SimServer(seed=1, port=0, anon_burst=1000, anon_rps=500.0) as server:
        yield server


@pytest.mark.redis
@pytest.mark.slow
def test_two_processes_sharing_the_redis_bucket_stay_under_the_limit_and_see_no_429(small_sim, redis_url):
    small_sim.reset()
    outs = _run_workers(small_sim, redis_url, "redis")
    stamps = sorted(s for o in outs for s in o["stamps"])
    assert all(len(o["stamps"]) > 3 for o in outs), "both processes must have worked"
    assert [o["errors"] for o in outs] == [[], []]
    assert small_sim.requests.count("/taxonomy") == len(stamps)
    assert all(r.status == 200 for r in small_sim.requests)
    assert _max_excess(stamps) <= 1  # +1: a request on each edge of a window


def _max_excess(stamps: list[float]) -> float:
    """How far the busiest window of the combined sends exceeds burst + rate x window."""
    return max(j - i + 1 - (18 + 4.5 * (stamps[j] - stamps[i]))
               for i in range(len(stamps)) for j in range(i, len(stamps)))


@pytest.mark.redis
@pytest.mark.slow
def test_shared_bucket_alone_holds_two_processes_to_the_configured_budget(roomy_sim, redis_url):
    roomy_sim.reset()
    outs = _run_workers(roomy_sim, redis_url, "redis")
    assert all(len(o["stamps"]) > 3 for o in outs)
    assert _max_excess(sorted(s for o in outs for s in o["stamps"])) <= 1


@pytest.mark.redis
@pytest.mark.slow
def test_without_the_shared_bucket_two_processes_exceed_the_configured_budget(roomy_sim, redis_url):
    """The control for the test above: with a bucket per process the budgets add up."""
    roomy_sim.reset()
    outs = _run_workers(roomy_sim, redis_url, "local")
    assert _max_excess(sorted(s for o in outs for s in o["stamps"])) > 5
