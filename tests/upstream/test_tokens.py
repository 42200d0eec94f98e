"""Tokens exactly as the spec says: header form only, only to the upstream host, sent by
transport policy, the caller's own over HTTP, and never anywhere a person or a log can read."""

from __future__ import annotations

import logging

import pytest

from eco_core.errors import EcoError
from upstream import models as m
from upstream.context import call_scope

from .conftest import CANARY

PRODUCT = "DP1.00001.001"


def _upstream_records(sim):
    return [r for r in sim.requests if r.port == sim.port]


def _storage_records(sim):
    return [r for r in sim.requests if r.port == sim.storage_port]


async def test_token_travels_only_in_the_header_never_in_the_query(sim_client, fresh_sim):
    token = fresh_sim.issue_token()
    client = sim_client(ECO_MCP_ECO__API_TOKEN=token)
    await client.product(PRODUCT)
    rec = fresh_sim.requests[-1]
    assert rec.headers.get("x-api-token") == token
    assert "apiToken" not in rec.query and token not in str(rec.query) and token not in rec.path


async def test_stdio_sends_the_token_to_public_endpoints_by_default(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token())
    await client.sites()
    assert "x-api-token" in fresh_sim.requests[-1].headers


async def test_http_keeps_public_requests_anonymous_and_sends_the_token_to_token_only_ones(sim_client, fresh_sim):
    token = fresh_sim.issue_token()
    client = sim_client(ECO_MCP_SERVER__TRANSPORT="http")
    with call_scope(token=token, token_source="request"):
        product = await client.product(PRODUCT)
        assert "x-api-token" not in fresh_sim.requests[-1].headers
        site = product.site_codes[0]
        await client.data_listing(PRODUCT, site.site_code, site.available_months[0], package="basic")
    assert fresh_sim.requests[-1].headers.get("x-api-token") == token


async def test_http_token_for_public_endpoints_true_sends_it_everywhere(sim_client, fresh_sim):
    token = fresh_sim.issue_token()
    client = sim_client(ECO_MCP_SERVER__TRANSPORT="http", ECO_MCP_ECO__TOKEN_FOR_PUBLIC_ENDPOINTS="true")
    with call_scope(token=token, token_source="request"):
        await client.sites()
    assert fresh_sim.requests[-1].headers.get("x-api-token") == token


async def test_http_anonymous_caller_is_not_lent_the_configured_token(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_SERVER__TRANSPORT="http", ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token())
    with call_scope(token=None), pytest.raises(EcoError) as caught:
        await client.data_listing(PRODUCT, "ABBY", "2023-01")
    assert caught.value.code == "auth_required"
    assert len(fresh_sim.requests) == 0


@pytest.mark.parametrize("call", [
    lambda c: c.data_listing(PRODUCT, "ABBY", "2023-01"),
    lambda c: c.data_query(m.DataQueryRequest(product_code=PRODUCT, site_codes=["ABBY"], start_date_month="2023-01",
                                              end_date_month="2023-01")),
    lambda c: c.sample_view(barcode="A00000123456"),
    lambda c: c.sample_download(barcode="A00000123456", degree=2),
    lambda c: c.data_file_url(PRODUCT, "ABBY", "2023-01", "x.csv"),
], ids=["data_listing", "data_query", "sample_view", "sample_download", "data_file_url"])
async def test_token_only_endpoint_without_a_token_fails_auth_required_before_any_request(sim_client, fresh_sim, call):
    client = sim_client()
    with pytest.raises(EcoError) as caught:
        await call(client)
    assert caught.value.code == "auth_required"
    assert len(fresh_sim.requests) == 0


async def test_signed_file_url_is_returned_without_following_it_to_storage(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token())
    product = await client.product(PRODUCT)
    site = product.site_codes[0]
    listing = await client.data_listing(PRODUCT, site.site_code, site.available_months[-1], package="basic")
    url = await client.data_file_url(PRODUCT, site.site_code, site.available_months[-1], listing.files[0].name)
    assert url.startswith(fresh_sim.storage_base)
    assert _storage_records(fresh_sim) == []


async def test_storage_host_never_receives_the_token_even_through_a_redirect(sim_client, fresh_sim):
    token = fresh_sim.issue_token()
    # The simulator's storage is plain http on a port of its own: a redirect reaches it only as
    # an origin the operator named.
    storage_origin = fresh_sim.storage_base.split("/storage/")[0]
    client = sim_client(ECO_MCP_ECO__API_TOKEN=token, ECO_MCP_DOWNLOADS__STORAGE_ORIGINS=storage_origin)
    listing_site = (await client.product(PRODUCT)).site_codes[0]
    listing = await client.data_listing(PRODUCT, listing_site.site_code, listing_site.available_months[-1])
    # Streaming a signed URL, and an upstream redirect that points at storage.
    async with client.stream(listing.files[0].url) as resp:
        assert resp.status_code == 200
        await resp.aread()
    # A download whose upstream URL redirects to storage (API reads refuse foreign redirects outright).
    fresh_sim.faults.add("redirect", route=r"/documents/", count=1, target=listing.files[0].url)
    async with client.stream(f"{fresh_sim.base_url}/documents/NEON.DOC.000780vD", host_allowed=lambda host: True) as resp:
        assert resp.status_code == 200
        assert await resp.aread()
    storage = _storage_records(fresh_sim)
    assert len(storage) >= 2
    assert all("x-api-token" not in r.headers for r in storage)
    assert all(token not in str(r.query) for r in storage)
    assert any(r.headers.get("x-api-token") == token for r in _upstream_records(fresh_sim))


async def test_download_allow_list_is_checked_on_every_redirect_hop(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("redirect", route=r"/documents/", count=1, target=f"{fresh_sim.storage_base}/x")
    with pytest.raises(EcoError) as caught:
        async with client.stream(f"{fresh_sim.base_url}/documents/NEON.DOC.000780vD",
                                 host_allowed=lambda host: host == "127.0.0.1"):
            pass
    assert caught.value.code == "download_denied"
    assert _storage_records(fresh_sim) == []


async def test_token_is_absent_from_logs_errors_and_cache_keys(sim_client, fresh_sim, caplog):
    caplog.set_level(logging.DEBUG)
    valid = fresh_sim.issue_token()
    canary = CANARY  # NEON rejects it: exercises the forbidden path too
    errors: list[EcoError] = []
    client = sim_client(ECO_MCP_ECO__API_TOKEN=valid)
    product = await client.product(PRODUCT)
    site = product.site_codes[0]
    await client.data_listing(PRODUCT, site.site_code, site.available_months[0])
    with call_scope(token=canary, token_source="request"):
        try:
            await client.data_listing(PRODUCT, site.site_code, site.available_months[0])
        except EcoError as exc:
            errors.append(exc)
    fresh_sim.faults.add("status", route="/products/", status=503)
    with call_scope(token=canary, token_source="request"):
        try:
            await client.product("DP1.10003.001")
        except EcoError as exc:
            errors.append(exc)
    assert [e.code for e in errors] == ["forbidden", "upstream_error"]
    keys = list(client.cache._backend._cache.keys())
    assert any(":tok-" in k for k in keys), "token-only data must be cached under the token's hash"
    for secret in (valid, canary):
        assert not any(secret in k for k in keys)
        assert not any(secret in rec.getMessage() for rec in caplog.records)
        assert not any(secret in repr(e) or secret in str(e.to_dict()) for e in errors)
        assert secret not in str(client.rate_limit_info()) and secret not in str(client.cache_info())


async def test_a_redirect_to_plain_http_on_the_upstream_host_is_refused_and_the_token_never_goes_over_it(
        client_factory):
    import httpx

    from .conftest import make_cfg, reply, sample

    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.scheme == "https":
            return httpx.Response(302, headers={"location": "http://data.neonscience.org/api/v0/sites/ABBY"})
        return reply(200, sample("sites_ABBY.json"))

    client = client_factory(handle, cfg=make_cfg({"ECO_MCP_ECO__API_TOKEN": CANARY}))
    with pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "upstream_error"
    assert caught.value.details["redirectOrigin"] == "http://data.neonscience.org"
    assert [r.url.scheme for r in seen] == ["https"]
    assert seen[0].headers.get("x-api-token") == CANARY


async def test_storage_downloads_do_not_spend_the_upstream_rate_budget(client_factory, clock):
    import httpx

    from .conftest import make_cfg

    client = client_factory(lambda request: httpx.Response(200, content=b"x" * 10),
                            cfg=make_cfg({"ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_BURST": "1",
                                          "ECO_MCP_ECO__RATE_LIMIT__MAX_WAIT_S": "0"}))
    for _ in range(5):
        async with client.stream("https://storage.googleapis.com/neon-publication/a.csv") as resp:
            assert await resp.aread() == b"x" * 10
    assert clock.sleeps == []
