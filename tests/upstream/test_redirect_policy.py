"""Ordinary API requests follow redirects only to the upstream's own origin (scheme, host and
port): a redirect elsewhere is upstream_error, never fetched. Downloads keep their allow-list
path, and may also be redirected to an allowed host over https or to a configured storage origin."""

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
    assert err.details == {"endpoint": "/sites/{siteCode}", "upstreamStatus": 302, "redirectHost": "evil.example",
                           "redirectOrigin": "https://evil.example"}
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


# ---------------------------------------------------------------------------------------------------
# Origins, not hosts: another port of the upstream's own host is another service (the service's
# admin, /metrics, Redis), and its answer must never pass for the upstream's.


async def _impostor(body: bytes):
    """A loopback server on a port of its own that answers every request with `body` as JSON."""
    from .bare_http import serve

    async def reply(writer) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()
        return True

    return await serve(reply, path="")


async def test_an_api_redirect_to_another_port_of_the_upstream_host_is_refused_and_nothing_is_cached(
        sim_client, fresh_sim):
    import json

    site_code = sorted(fresh_sim.world.sites)[0]
    forged = json.loads(sample("sites_ABBY.json"))
    forged["data"].update(siteCode=site_code, siteName="Impostor site")
    server, impostor = await _impostor(json.dumps(forged).encode())
    try:
        route = rf"^/api/v0/sites/{site_code}$"
        # Same host as the upstream (127.0.0.1), another port: today's answer from elsewhere.
        fresh_sim.faults.add("redirect", route=route, count=1, target=f"{impostor.url}/api/v0/sites/{site_code}")
        client = sim_client()
        with call_scope() as acct, pytest.raises(EcoError) as caught:
            await client.site(site_code)
        err = caught.value
        assert err.code == "upstream_error" and "not followed" in err.message
        assert err.details["redirectHost"] == "127.0.0.1"
        assert err.details["redirectOrigin"] == impostor.url
        assert impostor.heads == [], "the other port was never asked"
        assert acct.requests == 1

        # Nothing was cached: the next call asks the upstream again and gets the upstream's site.
        site = await client.site(site_code)
        assert site.site_name != "Impostor site"
        assert fresh_sim.requests.count(route) == 2
        assert impostor.heads == []
    finally:
        server.close()
        await server.wait_closed()


async def test_a_download_redirect_to_another_port_of_an_allowed_host_is_denied(sim_client, fresh_sim):
    server, impostor = await _impostor(b"{}")
    try:
        fresh_sim.faults.add("redirect", route=r"/documents/", count=1, target=f"{impostor.url}/metrics")
        client = sim_client()
        with pytest.raises(EcoError) as caught:
            async with client.stream(f"{fresh_sim.base_url}/documents/NEON.DOC.000780vD",
                                     host_allowed=lambda host: host == "127.0.0.1"):
                pass
        assert caught.value.code == "download_denied"
        assert caught.value.details["redirectOrigin"] == impostor.url
        assert impostor.heads == []
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("target", [
    "https://data.neonscience.org:8443/api/v0/sites/ABBY",   # another port of the upstream host
    "http://data.neonscience.org/api/v0/sites/ABBY",         # a downgrade to plain http
    "http://127.0.0.1:6379/",                                 # Redis on the service's own host
])
async def test_an_api_redirect_off_the_upstream_origin_is_not_followed(client_factory, target):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if len(seen) == 1:
            return httpx.Response(302, headers={"location": target})
        return reply(200, sample("sites_ABBY.json"))

    client = client_factory(handle)
    with pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "upstream_error" and caught.value.details["upstreamStatus"] == 302
    assert len(seen) == 1


@pytest.mark.parametrize(("target", "followed"), [
    ("https://storage.googleapis.com/neon/a.csv", True),             # an allowed host over https
    ("https://bucket.storage.googleapis.com/neon/a.csv", True),      # a '*.' pattern of the allow-list
    ("http://storage.googleapis.com/neon/a.csv", False),             # an allowed host, plain http
    ("https://storage.googleapis.com:8443/neon/a.csv", False),       # an allowed host, another port
    ("https://data.neonscience.org:8443/api/v0/x", False),           # the upstream host, another port
])
async def test_a_download_redirect_goes_only_to_an_allowed_host_over_https(client_factory, target, followed):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "data.neonscience.org" and request.url.port is None:
            return httpx.Response(302, headers={"location": target})
        return httpx.Response(200, content=b"a,b\n")

    client = client_factory(handle)
    url = "https://data.neonscience.org/api/v0/data/DP1.00001.001/HARV/2020-01/a.csv"
    if followed:
        async with client.stream(url, host_allowed=lambda host: True) as resp:
            assert await resp.aread() == b"a,b\n"
        assert seen == [url, target]
    else:
        with pytest.raises(EcoError) as caught:
            async with client.stream(url, host_allowed=lambda host: True):
                pass
        assert caught.value.code == "download_denied"
        assert seen == [url]


async def test_a_download_redirect_to_the_configured_storage_origin_is_followed_over_plain_http(client_factory):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "data.neonscience.org":
            return httpx.Response(302, headers={"location": "http://localhost:8766/storage/a.csv"})
        return httpx.Response(200, content=b"a,b\n")

    url = "https://data.neonscience.org/api/v0/documents/X"
    plain = client_factory(handle)
    with pytest.raises(EcoError):
        async with plain.stream(url, host_allowed=lambda host: True):
            pass
    configured = client_factory(handle, cfg=make_cfg({"ECO_MCP_DOWNLOADS__STORAGE_ORIGINS": "http://localhost:8766"}))
    async with configured.stream(url, host_allowed=lambda host: True) as resp:
        assert await resp.aread() == b"a,b\n"
    assert seen == [url, url, "http://localhost:8766/storage/a.csv"]
