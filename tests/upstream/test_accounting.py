"""Per-call accounting for `_meta["io.eco-mcp/upstream"]` and status reports (`--check` is tested
with the probe it shares with eco_ping, in tests/gateway/test_check.py)."""

from __future__ import annotations

import pytest

from eco_core.errors import EcoError
from eco_core.redact import token_hash
from upstream.client import UpstreamClient, close_clients, get_client
from upstream.context import call_scope

from .conftest import make_cfg, sim_env


async def test_call_scope_counts_requests_hits_headroom_and_identity(sim_client, fresh_sim):
    client = sim_client()
    token = fresh_sim.issue_token()
    with call_scope(token=token, token_source="request") as acct:
        await client.site("ABBY")
        await client.site("ABBY")
        await client.site("HARV")
    meta = acct.to_meta()
    assert meta["requests"] == 2 and meta["cacheHits"] == 1
    assert meta["rateLimitLimit"] == 2000 and 0 < meta["rateLimitRemaining"] < 2000
    assert meta["identity"] == token_hash(token) and token not in str(meta)
    assert acct.endpoints == ["GET /sites/{siteCode}", "GET /sites/{siteCode}"]


async def test_anonymous_call_reports_anonymous_identity_and_the_anonymous_limit(sim_client):
    client = sim_client()
    with call_scope() as acct:
        await client.site("ABBY")
    assert acct.to_meta()["identity"] == "anonymous" and acct.rate_limit_limit == 200


async def test_rate_limit_info_shows_the_budget_and_upstream_headroom(sim_client):
    client = sim_client()
    await client.site("ABBY")
    info = client.rate_limit_info()
    assert info["identity"] == "anonymous" and info["limit"] == 200 and info["remaining"] < 200
    assert info["budgetBurst"] == 180 and info["budgetPerSecond"] == 1.8


async def test_shared_client_is_one_per_event_loop_and_follows_the_active_config(active_config, fresh_sim):
    active_config(make_cfg(sim_env(fresh_sim)))
    try:
        first = get_client()
        assert get_client() is first and isinstance(first, UpstreamClient)
        await first.site("ABBY")
        await first.site("ABBY")
        active_config(make_cfg(sim_env(fresh_sim, ECO_MCP_CACHE__MAX_ENTRIES="7")))
        second = get_client()
        assert second is not first and second.cfg.cache.max_entries == 7
        assert second.breaker is not first.breaker
        await second.site("ABBY")  # nothing cached under the previous settings is served
        assert fresh_sim.requests.count("/sites/ABBY") == 2
    finally:
        await first.cache.clear()
        await close_clients()


async def test_client_from_a_thread_without_a_loop_shows_the_process_breaker(active_config, fresh_sim):
    import asyncio

    active_config(make_cfg(sim_env(fresh_sim)))
    try:
        client = get_client()
        fresh_sim.faults.add("graphql_outage")
        for _ in range(2):
            with pytest.raises(EcoError):
                await client.graphql("{ sites { siteCode } }")
        view = await asyncio.to_thread(get_client)
        assert view is not client
        assert view.graphql_available is False and view.breaker_state()["state"] == "open"
    finally:
        await close_clients()
