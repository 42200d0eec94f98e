"""eco_get_location's `include`: empty is the compact base record (no section at all), absent is the
spec's default (properties), through the SDK's real MCP client over HTTP."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

from mcp import Client

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config

SECTION_KEYS = ("locationProperties", "locationPropertiesRaw", "locationPolygon", "parentChain", "childrenByType",
                "children", "childrenPage", "hierarchyNodesScanned", "locationHistory")


async def test_an_empty_include_is_the_compact_base_record_and_an_absent_one_the_properties_over_http(
        http_server, sim_cfg, sim, active_config):
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "eco_get_location")
            for name in ("HARV", "D01"):
                base = assert_valid_tool_result(tool, await client.call_tool("eco_get_location",
                                                                              {"name": name, "include": []}))
                assert {k: base[k] for k in SECTION_KEYS} == dict.fromkeys(SECTION_KEYS), base
                assert base["locationName"] == name and base["propertyCount"] > 0  # the count stays in the base
                default = assert_valid_tool_result(tool, await client.call_tool("eco_get_location", {"name": name}))
                assert default["locationProperties"] and default["locationPropertiesRaw"], default
                same = [k for k in base if k not in ("locationProperties", "locationPropertiesRaw", "source")]
                assert {k: default[k] for k in same} == {k: base[k] for k in same}
