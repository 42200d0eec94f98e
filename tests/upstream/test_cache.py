"""The upstream cache: TTL per kind, single-flight, refresh-ahead, stale-if-error, entry cap,
token scoping and the off switch."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from eco_core.errors import EcoError
from upstream.context import call_scope

PRODUCT = "DP1.00001.001"
DETAIL_TTL = 900  # cache.ttl_s.detail default


async def test_second_call_is_served_from_cache_and_counted_as_a_hit(sim_client, fresh_sim):
    client = sim_client()
    with call_scope() as acct:
        await client.product(PRODUCT)
        await client.product(PRODUCT)
    assert fresh_sim.requests.count("/products/") == 1
    assert (acct.requests, acct.cache_hits) == (1, 1)
    assert client.cache_info()["hits"] == 1 and client.cache_info()["misses"] == 1


async def test_ten_concurrent_callers_of_a_cold_key_cause_one_upstream_request(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("latency", route="/products/", delay_s=0.3)
    products = await asyncio.gather(*(client.product(PRODUCT) for _ in range(10)))
    assert {p.product_code for p in products} == {PRODUCT}
    assert fresh_sim.requests.count("/products/") == 1


async def test_concurrent_callers_all_get_the_error_of_the_one_failed_fetch(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("latency", route="/products/", count=1, delay_s=0.3)
    results = await asyncio.gather(*(client.product("DP9.99999.999") for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, EcoError) and r.code == "not_found" for r in results)
    assert fresh_sim.requests.count("/products/") == 1


async def test_entry_expires_after_its_kinds_ttl(sim_client, fresh_sim, clock):
    client = sim_client()
    await client.product(PRODUCT)
    clock.now += DETAIL_TTL + 1
    await client.product(PRODUCT)
    assert fresh_sim.requests.count("/products/") == 2


async def test_ttl_comes_from_the_cache_ttl_setting_of_the_kind(sim_client, fresh_sim, clock):
    client = sim_client(ECO_MCP_CACHE__TTL_S__TAXONOMY="10")
    await client.taxonomy(filters={"taxonTypeCode": "TICK"}, limit=1)
    clock.now += 5
    await client.taxonomy(filters={"taxonTypeCode": "TICK"}, limit=1)
    assert fresh_sim.requests.count("/taxonomy") == 1
    clock.now += 6
    await client.taxonomy(filters={"taxonTypeCode": "TICK"}, limit=1)
    assert fresh_sim.requests.count("/taxonomy") == 2


async def test_stale_answer_is_served_and_flagged_during_an_outage(sim_client, fresh_sim, clock):
    client = sim_client()
    fresh = await client.product(PRODUCT)
    clock.now += DETAIL_TTL + 60
    fresh_sim.faults.add("status", route="/products/", status=503)
    with call_scope() as acct:
        stale = await client.product(PRODUCT)
    assert stale == fresh
    assert acct.stale_served is True and acct.to_meta()["staleServed"] is True


async def test_stale_answer_is_not_served_past_the_stale_if_error_window(sim_client, fresh_sim, clock):
    client = sim_client(ECO_MCP_CACHE__STALE_IF_ERROR_S="100")
    await client.product(PRODUCT)
    clock.now += DETAIL_TTL + 101
    fresh_sim.faults.add("status", route="/products/", status=503)
    with pytest.raises(EcoError) as caught:
        await client.product(PRODUCT)
    assert caught.value.code == "upstream_error"


async def test_stale_answer_is_not_served_for_a_non_retryable_error(sim_client, fresh_sim, clock):
    client = sim_client()
    await client.product(PRODUCT)
    clock.now += DETAIL_TTL + 1
    fresh_sim.faults.add("status", route="/products/", status=400,
                         body={"error": {"status": 400, "detail": "Product code not found"}, "data": None})
    with pytest.raises(EcoError) as caught:
        await client.product(PRODUCT)
    assert caught.value.code == "not_found"


async def test_hit_in_the_last_fraction_of_the_ttl_refreshes_in_the_background(sim_client, fresh_sim, clock):
    client = sim_client()
    await client.product(PRODUCT)
    clock.now += DETAIL_TTL * 0.95
    with call_scope() as acct:
        await client.product(PRODUCT)
    assert acct.cache_hits == 1
    await client.cache.drain()
    assert fresh_sim.requests.count("/products/") == 2
    clock.now += DETAIL_TTL * 0.5  # past the first entry's TTL, inside the refreshed one's
    await client.product(PRODUCT)
    assert fresh_sim.requests.count("/products/") == 2


async def test_hit_early_in_the_ttl_does_not_refresh(sim_client, fresh_sim, clock):
    client = sim_client()
    await client.product(PRODUCT)
    clock.now += DETAIL_TTL * 0.5
    await client.product(PRODUCT)
    await client.cache.drain()
    assert fresh_sim.requests.count("/products/") == 1


async def test_disabled_cache_asks_upstream_every_time(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_CACHE__ENABLED="false")
    await client.product(PRODUCT)
    await client.product(PRODUCT)
    assert fresh_sim.requests.count("/products/") == 2
    assert client.cache_info()["enabled"] is False


async def test_cache_holds_at_most_max_entries(sim_client):
    client = sim_client(ECO_MCP_CACHE__MAX_ENTRIES="3")
    for name in ("D01", "D02", "D03", "D04", "D05", "D06", "HARV"):
        await client.location(name)
    assert client.cache_info()["entries"] <= 3


async def test_public_answers_are_shared_across_tokens(sim_client, fresh_sim):
    client = sim_client()
    with call_scope(token=fresh_sim.issue_token(), token_source="request"):
        await client.site("ABBY")
    with call_scope(token=None):
        await client.site("ABBY")
    assert fresh_sim.requests.count("/sites/") == 1


async def test_token_only_answers_are_cached_per_token(sim_client, fresh_sim):
    client = sim_client()
    first, second = fresh_sim.issue_token(), fresh_sim.issue_token(exp_s=7200)
    for token in (first, second, first):
        with call_scope(token=token, token_source="request"):
            await client.sample_view(barcode="A00000123456")
    assert fresh_sim.requests.count("/samples/view") == 2


@pytest.mark.redis
async def test_redis_backed_cache_caps_entries_and_clears_only_its_own_keys(redis_url, clock):
    import uuid

    import redis.asyncio as aioredis
    from django.core.cache.backends.redis import RedisCache

    from upstream.cache import UpstreamCache

    from .conftest import make_cfg

    prefix = f"eco-test-{uuid.uuid4().hex}"
    conn = aioredis.from_url(redis_url)
    cfg = make_cfg({"ECO_MCP_CACHE__MAX_ENTRIES": "3"}).cache
    cache = UpstreamCache(cfg, backend=RedisCache(redis_url, {"KEY_PREFIX": prefix, "TIMEOUT": None}),
                          redis_client=conn, clock=clock)
    try:
        await conn.set(f"{prefix}-not-ours", b"keep")
        fetched = []

        async def fetch(i=0):
            fetched.append(i)
            return f"value-{i}".encode()

        for i in range(5):
            await cache.get_or_fetch(f"k{i}", 60, lambda i=i: fetch(i))
        assert cache.info()["backend"] == "redis" and cache.info()["entries"] == 3
        hit = await cache.get_or_fetch("k4", 60, fetch)
        assert hit.hit and hit.value == b"value-4"
        evicted = await cache.get_or_fetch("k0", 60, lambda: fetch(0))
        assert not evicted.hit and fetched == [0, 1, 2, 3, 4, 0]
        await cache.clear()
        assert await conn.get(f"{prefix}-not-ours") == b"keep"
        assert not (await cache.get_or_fetch("k4", 60, lambda: fetch(4))).hit
    finally:
        await cache.clear()
        await conn.delete(f"{prefix}-not-ours")
        await conn.aclose()


async def test_waiters_take_over_when_the_fetching_caller_is_cancelled(client_factory):
    import httpx

    from .conftest import reply, sample

    release = asyncio.Event()
    calls = 0

    async def handle(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            await release.wait()  # the first fetch hangs until its caller is cancelled
        return reply(200, sample("sites_ABBY.json"))

    client = client_factory(handle)
    leader = asyncio.create_task(client.site("ABBY"))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(client.site("ABBY"))
    await asyncio.sleep(0.01)
    leader.cancel()
    site = await asyncio.wait_for(waiter, 5)
    release.set()
    assert site.site_code == "ABBY" and calls == 2
    with pytest.raises(asyncio.CancelledError):
        await leader


async def test_locmem_entry_count_follows_culls_and_is_shared_by_caches_on_one_store():
    from eco_core.config import load_config
    from upstream.cache import UpstreamCache, locmem_backend

    cfg = load_config(env={"ECO_MCP_CACHE__MAX_ENTRIES": "3"}, warn=False).cache
    store = locmem_backend(3, "entries-count")
    first = UpstreamCache(cfg, backend=store)
    second = UpstreamCache(cfg, backend=locmem_backend(3, "entries-count"))
    await first.put("a", 60, 1)
    await second.put("b", 60, 2)
    assert first.entries() == second.entries() == 2
    for key in "cdefg":
        await first.put(key, 60, key)
    present = sum(store.has_key(k) for k in "abcdefg")
    assert first.entries() == second.entries() == present <= 3
    await second.clear()
    assert first.entries() == 0


async def test_a_large_answer_is_held_compressed_in_process_and_served_as_it_was_fetched(clock):
    from eco_core.config import load_config
    from upstream.cache import PACK_FROM, PACK_IN_THREAD_FROM, UpstreamCache, locmem_backend

    cfg = load_config(env={}, warn=False).cache
    store = locmem_backend(10, "packed-bodies")
    cache = UpstreamCache(cfg, backend=store, clock=clock)
    small, large = b'{"data": 1}', b'{"data": [%s]}' % b",".join(b'"HARV"' for _ in range(PACK_IN_THREAD_FROM))
    assert len(large) > PACK_IN_THREAD_FROM > PACK_FROM > len(small)
    for key, body in (("small", small), ("large", large)):
        await cache.put(key, 60, body)

    async def unreachable() -> bytes:
        raise AssertionError("a fresh entry must not be fetched")

    assert (await cache.get_or_fetch("large", 60, unreachable)).value == large
    assert (await cache.get_or_fetch("small", 60, unreachable)).value == small
    assert store.get("small")["v"] == small  # small bodies are held as they are
    assert len(pickle.dumps(store.get("large"))) < len(large) // 10

    # An expired one served during an outage is the body as fetched, too.
    clock.now += 61

    async def outage() -> bytes:
        raise EcoError("upstream_unavailable", "down", retryable=True)

    stale = await cache.get_or_fetch("large", 60, outage)
    assert stale.stale and stale.value == large
