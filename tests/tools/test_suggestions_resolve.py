"""Suggestions are values that resolve: through the SDK's real MCP client over HTTP, every
`didYouMean` entry of a not_found answer, and every name a hint quotes, is fed back into the same
argument of the same tool and must succeed; a search's own `didYouMean` entries, fed back as its
query, must find something."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import re
from typing import Any

from mcp import Client

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config

PRODUCT = "DP1.10003.001"


def misses(sim: Any) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the argument that names nothing): each answers not_found."""
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    return [
        ("eco_find_locations", {"root": "HARVV"}, "root"),
        ("eco_get_location", {"name": "HARVV"}, "name"),
        ("eco_get_location", {"name": "harvard"}, "name"),
        ("eco_get_location", {"name": "Bartlett Experimental Forest"}, "name"),
        ("eco_get_location", {"name": tower.lower()}, "name"),
        ("eco_find_locations", {"site_codes": ["HARX"]}, "site_codes"),
        ("eco_get_site", {"site": "HARVV"}, "site"),
        ("eco_get_site", {"site": "Harvrd Forst"}, "site"),
        ("eco_get_availability", {"product": PRODUCT, "site": "Bartlet Experimentl"}, "site"),
        ("eco_get_product", {"product": "wind speeed and direction"}, "product"),
        ("eco_get_product", {"product": "DP1.00001.002"}, "product"),
        ("eco_get_citation", {"product": "breeding landbrd pointcount"}, "product"),
        ("eco_get_release", {"release": "RELEASE-20"}, "release"),
    ]


def _with(arguments: dict[str, Any], field: str, value: str) -> dict[str, Any]:
    return {**arguments, field: [value] if isinstance(arguments[field], list) else value}


async def test_every_did_you_mean_entry_and_every_name_a_hint_quotes_resolves_when_fed_back_over_http(
        http_server, sim_cfg, sim, active_config):
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            problems: list[str] = []
            for tool, arguments, field in misses(sim):
                result = await client.call_tool(tool, arguments)
                assert result.is_error, (tool, arguments)
                err = result.structured_content["error"]
                assert err["code"] == "not_found", err
                offered = list(err["details"]["didYouMean"])
                quoted = re.findall(r"'([^']+)'", err["hint"])
                assert offered, f"{tool}({arguments}) suggests nothing: {err}"
                for value in dict.fromkeys(offered + quoted):
                    again = await client.call_tool(tool, _with(arguments, field, value))
                    if again.is_error:
                        problems.append(f"{tool}({arguments}) suggests {value!r}, which fails: "
                                        f"{again.structured_content['error']}")
                    else:
                        assert_valid_tool_result(tools[tool], again)
            assert not problems, "\n".join(problems)


async def test_a_mistyped_location_suggests_the_site_it_resembles_and_a_lower_case_name_its_upper_case(
        http_server, sim_cfg, sim, active_config):
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            for tool, field in (("eco_find_locations", "root"), ("eco_get_location", "name")):
                err = (await client.call_tool(tool, {field: "HARVV"})).structured_content["error"]
                assert err["details"]["didYouMean"][0] == "HARV", err
            err = (await client.call_tool("eco_get_location", {"name": tower.lower()})).structured_content["error"]
            assert err["details"]["didYouMean"][0] == tower and f"'{tower}'" in err["hint"], err
            err = (await client.call_tool("eco_get_location", {"name": "harvard"})).structured_content["error"]
            assert "'HARVARD'" not in err["hint"] and "HARV" in err["details"]["didYouMean"], err


async def test_a_search_that_finds_nothing_suggests_queries_that_find_something_over_http(
        http_server, sim_cfg, sim, active_config):
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            for tool, query in (("eco_search_sites", "Harvard Quabbin zzzz"), ("eco_search_products", "zzqx soyl tempreture")):
                body = (await client.call_tool(tool, {"query": query})).structured_content
                assert body["items"] == [] and body["didYouMean"], (tool, body)
                for suggestion in body["didYouMean"]:
                    found = (await client.call_tool(tool, {"query": suggestion})).structured_content
                    assert found.get("items"), f"{tool} suggests {suggestion!r}, which finds nothing: {found}"
