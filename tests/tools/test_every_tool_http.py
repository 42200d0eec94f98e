"""Every registered tool, called over real HTTP through the SDK's client against the simulator:
each reply carries its result whole (mcp_gateway.splice writes the text and structured content
into the SDK's reply), a result valid against the tool's schema or an error with a stable code."""

from __future__ import annotations

import json

from mcp import Client

from mcp_gateway import splice
from mcp_gateway.registry import default_registry
from tests.gateway.checks import outcome_of
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config

SOIL = "DP1.00041.001"
SEEDS = {
    "eco_search_products": {"query": "soil temperature", "limit": 3},
    "eco_get_product": {"product": SOIL},
    "eco_get_availability": {"product": SOIL},
    "eco_search_sites": {"query": "forest"},
    "eco_get_site": {"site": "HARV"},
    "eco_list_releases": {},
    "eco_get_release": {"release": "RELEASE-2026"},
    "eco_get_citation": {"product": SOIL, "release": "RELEASE-2026"},
    "eco_find_locations": {"site": "HARV"},
    "eco_list_sample_classes": {},
}
MUST_ANSWER = {"eco_ping", "eco_search_products", "eco_get_product", "eco_get_availability", "eco_search_sites",
               "eco_get_site", "eco_list_releases"}


async def test_every_tool_over_http_gets_its_whole_result_or_a_stable_error(http_server, sim_cfg, sim, active_config):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)  # the server thread's upstream client reads the active configuration
    seen: dict[str, str] = {}
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            for tool in (await client.list_tools()).tools:
                result = await client.call_tool(tool.name, SEEDS.get(tool.name, {}))
                [text] = result.content
                assert text.type == "text" and splice.KEY not in text.text, tool.name
                assert result.structured_content == json.loads(text.text), tool.name
                seen[tool.name] = outcome_of(tool, result)
    assert set(seen) == {spec.name for spec in default_registry().listed(http=True)}
    assert {name for name, outcome in seen.items() if outcome == "ok"} >= MUST_ANSWER, seen
