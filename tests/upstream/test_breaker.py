"""The GraphQL breaker: opens after N consecutive failures, sends callers to REST, and after the
cooldown lets one trial through."""

from __future__ import annotations

import pytest

from eco_core.errors import EcoError
from upstream import models as m
from upstream.breaker import GraphQLBreaker

QUERY = "query NeonMcpProductsCatalog { products { productCode productName } }"
COOLDOWN = 900.0


async def _product_codes(client) -> tuple[str, list[str]]:
    """How a catalog caller is meant to use the client: GraphQL while available, else REST."""
    if client.graphql_available:
        try:
            data = await client.graphql(QUERY, model=m.GqlProductsData, operation_name="NeonMcpProductsCatalog")
            return "graphql", [p.product_code for p in data.products]
        except EcoError:
            pass
    return "rest", [p.product_code for p in await client.products()]


async def _fail_twice(client):
    for _ in range(2):
        with pytest.raises(EcoError):
            await client.graphql(QUERY)


async def test_breaker_opens_after_the_configured_consecutive_failures(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("graphql_outage")
    with pytest.raises(EcoError):
        await client.graphql(QUERY)
    assert client.breaker_state()["state"] == "closed" and client.graphql_available
    with pytest.raises(EcoError):
        await client.graphql(QUERY)
    state = client.breaker_state()
    assert state["state"] == "open" and state["openUntil"] is not None
    assert client.graphql_available is False


async def test_open_breaker_skips_graphql_without_a_request_and_rest_serves(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("graphql_outage")
    await _fail_twice(client)
    sent = fresh_sim.requests.count("^/graphql")
    with pytest.raises(EcoError) as caught:
        await client.graphql(QUERY)
    assert caught.value.code == "upstream_unavailable" and caught.value.details["breaker"]["state"] == "open"
    source, codes = await _product_codes(client)
    assert source == "rest" and "DP1.00001.001" in codes
    assert fresh_sim.requests.count("^/graphql") == sent


async def test_breaker_closes_after_the_cooldown_and_a_success_clears_it(sim_client, fresh_sim, clock):
    client = sim_client()
    fresh_sim.faults.add("graphql_outage")
    await _fail_twice(client)
    fresh_sim.faults.clear()
    clock.now += COOLDOWN + 1
    assert client.breaker_state()["state"] == "closed"
    source, _ = await _product_codes(client)
    assert source == "graphql"
    assert client.breaker_state()["consecutiveFailures"] == 0


async def test_failed_trial_after_the_cooldown_reopens_at_once(sim_client, fresh_sim, clock):
    client = sim_client()
    fresh_sim.faults.add("graphql_outage")
    await _fail_twice(client)
    clock.now += COOLDOWN + 1
    with pytest.raises(EcoError):
        await client.graphql(QUERY)
    assert client.breaker_state()["state"] == "open"


async def test_callers_own_bad_queries_do_not_trip_the_breaker(sim_client):
    client = sim_client()
    for _ in range(3):
        with pytest.raises(EcoError):
            await client.graphql("{ nope }", use_breaker=False)
    state = client.breaker_state()
    assert (state["state"], state["consecutiveFailures"]) == ("closed", 0)


async def test_schema_drift_in_a_catalog_query_counts_as_a_failure(sim_client):
    client = sim_client()
    with pytest.raises(EcoError) as caught:
        await client.graphql("{ products { productScienceTeamAbbr } }")
    assert caught.value.code == "graphql_error"
    assert client.breaker_state()["consecutiveFailures"] == 1


def test_success_between_failures_resets_the_count():
    now = [0.0]
    breaker = GraphQLBreaker(failures=2, cooldown_s=10, clock=lambda: now[0])
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert breaker.is_open is False
    breaker.record_failure()
    assert breaker.is_open is True
    now[0] = 10.0
    assert breaker.is_open is False
