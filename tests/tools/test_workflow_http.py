"""An agent's first four calls, through the SDK's real MCP client over HTTP against the real
server, with the simulator behind it: search -> product -> availability -> site, each next
call built from the previous result's nextSteps."""

from __future__ import annotations

from mcp import Client

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config


def _step(payload: dict, tool: str) -> dict:
    return next(s["arguments"] for s in payload["nextSteps"] if s["tool"] == tool)


async def test_search_product_availability_site_workflow_over_http(http_server, sim_cfg, sim, active_config):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)  # the server thread's upstream client reads the active configuration
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"eco_search_products", "eco_get_product", "eco_get_availability", "eco_search_sites",
                    "eco_get_site"} <= set(tools)

            found = await client.call_tool("eco_search_products", {"query": "soil temperature", "limit": 3})
            search = assert_valid_tool_result(tools["eco_search_products"], found)
            assert search["items"][0]["productCode"] == "DP1.00041.001"
            assert found.meta["io.eco-mcp/upstream"]["requests"] == 0

            product = assert_valid_tool_result(
                tools["eco_get_product"], await client.call_tool("eco_get_product", _step(search, "eco_get_product")))
            assert product["productName"] == "Soil temperature" and product["productAbstract"]

            avail_args = _step(product, "eco_get_availability")
            avail = assert_valid_tool_result(
                tools["eco_get_availability"], await client.call_tool("eco_get_availability", avail_args))
            assert avail["mode"] == "product"
            assert [r["siteCode"] for r in avail["rows"]] == sorted(sim.world.availability("DP1.00041.001"))

            site_args = _step(avail, "eco_get_site")
            site = assert_valid_tool_result(tools["eco_get_site"], await client.call_tool("eco_get_site", site_args))
            assert site["siteCode"] == avail["rows"][0]["siteCode"]
            assert site["productCount"] == site["dataProductsPage"]["total"] == len(
                sim.world.site_products(site["siteCode"]))

            near = assert_valid_tool_result(tools["eco_search_sites"], await client.call_tool(
                "eco_search_sites", {"product": "DP1.00041.001", "latitude": site["siteLatitude"],
                                     "longitude": site["siteLongitude"], "radius_km": 500}))
            assert near["items"][0]["siteCode"] == site["siteCode"] and near["items"][0]["distanceKm"] == 0.0
            cell = _step(near, "eco_get_availability")
            assert cell == {"product": "DP1.00041.001", "site": site["siteCode"]}
            one = assert_valid_tool_result(tools["eco_get_availability"],
                                           await client.call_tool("eco_get_availability", cell))
            assert one["mode"] == "cell" and _step(one, "eco_list_files")["site_codes"] == [site["siteCode"]]
