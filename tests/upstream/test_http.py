"""The shared HTTP layer: timeouts per kind, the concurrency cap, the User-Agent."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from eco_core.errors import EcoError

from .conftest import make_cfg, reply, sample


async def test_catalog_requests_get_the_longer_catalog_read_timeout(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__READ_TIMEOUT_S="0.3", ECO_MCP_ECO__CATALOG_READ_TIMEOUT_S="10",
                        ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS="1")
    fresh_sim.faults.add("latency", route="^/api/v0/sites", count=2, delay_s=0.8)
    assert len(await client.sites()) == 81
    with pytest.raises(EcoError) as caught:
        await client.site("ABBY")
    assert caught.value.code == "upstream_unavailable"


async def test_at_most_max_concurrency_requests_are_in_flight(client_factory):
    in_flight = peak = 0

    async def handle(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return reply(200, sample("locations_D01.json"))

    client = client_factory(handle, cfg=make_cfg({"ECO_MCP_ECO__MAX_CONCURRENCY": "2"}))
    await asyncio.gather(*(client.location(f"D{i:02d}") for i in range(1, 9)))
    assert peak == 2


async def test_user_agent_names_the_service_and_the_configured_suffix(sim_client, fresh_sim):
    await sim_client(ECO_MCP_ECO__USER_AGENT_SUFFIX="lab-42 (ops@example.org)").site("ABBY")
    agent = fresh_sim.requests[-1].headers["user-agent"]
    assert agent.startswith("eco-mcp/") and agent.endswith("lab-42 (ops@example.org)")


async def test_graphql_goes_to_the_configured_graphql_address(sim_client, fresh_sim):
    await sim_client().graphql("{ sites { siteCode } }")
    rec = fresh_sim.requests[-1]
    assert (rec.method, rec.path) == ("POST", "/graphql")


async def test_user_input_cannot_change_the_route(client_factory):
    seen: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return reply(400, sample("error_400_location_not_found.json"))

    with pytest.raises(EcoError):
        await client_factory(handle).location("../products?x=1")  # a dot segment: refused before sending
    assert seen == []
    with pytest.raises(EcoError):
        await client_factory(handle).location("products?x=1#y")
    assert seen == ["/api/v0/locations/products%3Fx%3D1%23y"]


async def test_a_cookie_an_answer_sets_is_never_sent_with_a_later_request(client_factory):
    # One client serves every caller of a worker: a cookie kept from one answer would ride on
    # the next caller's request.
    sent: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("cookie"))
        resp = reply(200, sample("products_DP1.00001.001.json"))
        resp.headers["set-cookie"] = "session=abc123; Path=/"
        return resp

    client = client_factory(handle)
    await client.product("DP1.00001.001")
    await client.product("DP1.00001.001", release="RELEASE-2025")
    assert len(sent) == 2 and sent == [None, None]
