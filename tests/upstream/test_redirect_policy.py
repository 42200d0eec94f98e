"""Ordinary API requests follow redirects only to the upstream's own host: a
redirect elsewhere is upstream_error, never fetched. Downloads keep their allow-list path."""

from __future__ import annotations

import httpx
import pytest

from eco_core.errors import EcoError
from upstream.context import call_scope

from .conftest import make_cfg, reply, sample


async def test_an_api_redirect_to_a_foreign_host_is_upstream_error_and_not_followed(client_factory):
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "data.neonscience.org":
            return httpx.Response(302, headers={"location": "https://evil.example/api/v0/sites/ABBY"})
        return reply(200, sample("sites_ABBY.json"))

    client = client_factory(handle)
    with call_scope() as acct, pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    err = caught.value
    assert err.code == "upstream_error"
    assert "evil.example" in err.message and "not followed" in err.message
    assert err.details == {"endpoint": "/sites/{siteCode}", "upstreamStatus": 302, "redirectHost": "evil.example"}
    assert [r.url.host for r in seen] == ["data.neonscience.org"], "the foreign host was never asked"
    assert acct.requests == 1


async def test_an_api_redirect_on_the_upstream_host_is_still_followed(client_factory):
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/sites/abby"):
            return httpx.Response(301, headers={"location": "/api/v0/sites/ABBY"})
        return reply(200, sample("sites_ABBY.json"))

    client = client_factory(handle)
    with call_scope() as acct:
        site = await client.site("abby")
    assert site.site_code == "ABBY"
    assert acct.requests == 2, "both hops count"


async def test_a_graphql_redirect_to_a_foreign_host_is_not_followed(client_factory):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        return httpx.Response(307, headers={"location": "https://collector.example/graphql"})

    client = client_factory(handle)
    with pytest.raises(EcoError) as caught:
        await client.graphql("{ products { productCode } }", use_breaker=False)
    assert caught.value.code == "upstream_error" and caught.value.details["redirectHost"] == "collector.example"
    assert seen == ["data.neonscience.org"]


async def test_a_download_redirect_to_an_allowed_storage_host_is_followed(client_factory):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        if request.url.host == "data.neonscience.org":
            return httpx.Response(302, headers={"location": "https://storage.googleapis.com/neon/a.csv"})
        return httpx.Response(200, content=b"a,b\n")

    client = client_factory(handle, cfg=make_cfg())
    url = "https://data.neonscience.org/api/v0/data/DP1.00001.001/HARV/2020-01/a.csv"
    async with client.stream(url, host_allowed=lambda host: host.endswith(("neonscience.org", "googleapis.com"))) as r:
        assert await r.aread() == b"a,b\n"
    assert seen == ["data.neonscience.org", "storage.googleapis.com"]


async def test_timeouts_count_as_requests_in_the_call_accounting(client_factory):
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    client = client_factory(handle)
    with call_scope() as acct, pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "upstream_unavailable"
    assert acct.requests == 3


async def test_three_attempts_on_a_persistent_503_count_three_requests(client_factory):
    client = client_factory(lambda request: reply(503, b"<html>503</html>"))
    with call_scope() as acct, pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "upstream_error" and caught.value.details["upstreamStatus"] == 503
    assert acct.requests == 3
