"""Each NEON answer maps to the spec's error code, driven by the simulator's real replies and
its fault knobs; retries and backoff run on a fake clock (no real sleeps)."""

from __future__ import annotations

import socket

import pytest

from eco_core.errors import EcoError
from upstream.context import call_scope

from .conftest import make_cfg

PRODUCT = "DP1.00001.001"


async def _error(coro) -> EcoError:
    with pytest.raises(EcoError) as caught:
        await coro
    return caught.value


async def test_unknown_product_gives_not_found(sim_client):
    err = await _error(sim_client().product("DP9.99999.999"))
    assert err.code == "not_found" and not err.retryable


async def test_unknown_release_gives_not_found_with_valid_releases(sim_client):
    err = await _error(sim_client().product(PRODUCT, release="RELEASE-1999"))
    assert err.code == "not_found"
    assert "RELEASE-2025" in err.details["validReleases"]


async def test_unknown_location_gives_not_found(sim_client):
    assert (await _error(sim_client().location("NOPE_NOT_A_LOCATION"))).code == "not_found"


async def test_other_upstream_400_gives_invalid_argument_with_neons_reason(sim_client):
    err = await _error(sim_client().taxonomy(filters={"taxonTypeCode": "BIRD", "family": "Anatidae"}))
    assert err.code == "invalid_argument"
    assert "must not both be specified" in err.message


async def test_upstream_403_without_a_token_gives_auth_required(sim_client, fresh_sim):
    fresh_sim.faults.add("status", route="/sites", count=1, status=403,
                         body={"error": {"status": 403, "detail": "Access Denied"}, "data": None})
    assert (await _error(sim_client().sites())).code == "auth_required"


async def test_rejected_token_gives_forbidden(sim_client, fresh_sim):
    client = sim_client()
    with call_scope(token=fresh_sim.issue_token(exp_s=-10), token_source="request"):  # expired
        err = await _error(client.data_listing(PRODUCT, "ABBY", "2023-01"))
    assert err.code == "forbidden"


async def test_samples_classes_404_for_a_tag_without_classes_is_an_empty_list(sim_client):
    assert (await sim_client().sample_classes("NOPE")).sample_classes == []


async def test_unknown_document_gives_not_found(sim_client):
    assert (await _error(sim_client().document_head("NEON.DOC.NOPE"))).code == "not_found"


async def test_persistent_5xx_is_retried_with_exponential_backoff_then_upstream_error(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("status", route="/products/", status=502)
    err = await _error(sim_client().product(PRODUCT))
    assert err.code == "upstream_error" and err.retryable
    assert err.details["upstreamStatus"] == 502
    assert fresh_sim.requests.count("/products/") == 3
    assert clock.sleeps == [0.5, 1.0]


async def test_backoff_is_capped_at_backoff_max(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("status", route="/products/", status=500)
    client = sim_client(ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS="6", ECO_MCP_ECO__RETRIES__BACKOFF_MAX_S="3")
    await _error(client.product(PRODUCT))
    assert clock.sleeps == [0.5, 1.0, 2.0, 3.0, 3.0]


async def test_transient_5xx_is_retried_until_it_succeeds(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("status", route="/products/", count=2, status=503)
    product = await sim_client().product(PRODUCT)
    assert product.product_code == PRODUCT
    assert fresh_sim.requests.count("/products/") == 3
    assert clock.sleeps == [0.5, 1.0]


async def test_client_errors_are_not_retried(sim_client, fresh_sim, clock):
    await _error(sim_client().product("DP9.99999.999"))
    assert fresh_sim.requests.count("/products/") == 1 and clock.sleeps == []


async def test_connection_reset_is_retried_then_upstream_unavailable(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("reset", route="/sites/")
    err = await _error(sim_client().site("ABBY"))
    assert err.code == "upstream_unavailable"
    assert fresh_sim.requests.count("/sites/") == 3 and clock.sleeps == [0.5, 1.0]


async def test_read_timeout_gives_upstream_unavailable(sim_client, fresh_sim):
    fresh_sim.faults.add("hang", route="/sites/", count=1, hold_s=5)
    client = sim_client(ECO_MCP_ECO__READ_TIMEOUT_S="0.3", ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS="1")
    err = await _error(client.site("ABBY"))
    assert err.code == "upstream_unavailable" and "timed out" in err.message


async def test_unreachable_upstream_gives_upstream_unavailable(client_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    cfg = make_cfg({"ECO_MCP_ECO__BASE_URL": f"http://127.0.0.1:{port}/api/v0"})
    err = await _error(client_factory(None, cfg=cfg).sites())
    assert err.code == "upstream_unavailable"


async def test_malformed_body_gives_upstream_error_and_is_not_cached(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("malformed", route="/products/", count=1)
    err = await _error(client.product(PRODUCT))
    assert err.code == "upstream_error" and err.details["reason"] == "unexpected_body"
    assert (await client.product(PRODUCT)).product_code == PRODUCT


async def test_reply_missing_a_relied_on_field_gives_upstream_error_naming_it(sim_client, fresh_sim):
    fresh_sim.faults.add("status", route="/sites/", count=1, status=200, body={"data": {"siteCode": "ABBY"}})
    err = await _error(sim_client().site("ABBY"))
    assert err.code == "upstream_error" and "siteName" in err.message


async def test_rate_limited_reply_is_retried_after_its_retryafter(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("rate_limit", route="/sites/", count=1, retry_after=2)
    site = await sim_client().site("ABBY")
    assert site.site_code == "ABBY"
    assert fresh_sim.requests.count("/sites/") == 2
    assert sum(clock.sleeps) == pytest.approx(2.0)


async def test_rate_limit_wait_beyond_max_wait_gives_rate_limited_with_retry_after(sim_client, fresh_sim, clock):
    fresh_sim.faults.add("rate_limit", route="/sites/", retry_after=60)
    err = await _error(sim_client().site("ABBY"))
    assert err.code == "rate_limited" and err.retryable
    assert err.details["retryAfterSeconds"] == 60
    assert fresh_sim.requests.count("/sites/") == 1 and clock.sleeps == []


async def test_graphql_errors_give_graphql_error(sim_client):
    err = await _error(sim_client().graphql("{ nope }", use_breaker=False))
    assert err.code == "graphql_error" and not err.retryable
    assert "nope" in err.details["errors"][0]["message"]


async def test_graphql_outage_gives_upstream_error(sim_client, fresh_sim):
    fresh_sim.faults.add("graphql_outage")
    err = await _error(sim_client().graphql("{ products { productCode } }"))
    assert err.code == "upstream_error"

