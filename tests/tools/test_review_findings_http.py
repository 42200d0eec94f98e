"""What a review of every tool against the specification found, each checked through the SDK's
client over HTTP against the simulator: defaults stated in the input schemas, eco_graphql's
published limits, `resolved` echoing every resolution, eco_ping during an upstream 429,
suggestions for a name one character off, one wording for an ignored token header, and a site
walk at one upstream request on a fresh catalog."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.downloads.conftest import sim_token, token_config  # noqa: F401  (fixtures)
from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session
from upstream_sim.biodata import RECORDED_PROTO_UUID


async def _ok(client: Any, tools: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    return assert_valid_tool_result(tools[name], await client.call_tool(name, args))


@contextlib.asynccontextmanager
async def token_session(serve: Callable[..., Any], sim: Any, active_config: Callable[[Any], Any],
                        token: str, **flags: Any) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    """The SDK's client over HTTP sending `token` in X-API-Token, against a server configured with
    `flags` (a new configuration: the upstream cache starts cold)."""
    cfg = token_config(sim, None, server__transport="http", **flags)
    active_config(cfg)
    with serve(cfg) as srv:
        transport = streamable_http_client(srv.url, http_client=create_mcp_http_client(headers={"X-API-Token": token}))
        async with Client(transport, mode="2026-07-28") as client:
            yield client, {t.name: t for t in (await client.list_tools()).tools}


def _filled(tool: Any, args: dict[str, Any]) -> dict[str, Any]:
    """`args` with every input the schema gives a default filled in from it, as a client that
    fills defaults from the schema sends them."""
    props = tool.input_schema["properties"]
    return {**{k: copy.deepcopy(p["default"]) for k, p in props.items() if "default" in p}, **args}


# -- 1. defaults in the schema ----------------------------------------------------------------

async def test_a_client_filling_defaults_from_the_schema_gets_the_answer_of_one_that_omits_them(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        # Where leaving include out differs from [], the schema says what it is.
        assert tools["eco_get_location"].input_schema["properties"]["include"]["default"] == ["properties"]
        assert tools["eco_get_release"].input_schema["properties"]["include"]["default"] == ["products"]
        assert tools["eco_get_prototype_dataset"].input_schema["properties"]["include"]["default"] == [
            "files", "locations"]
        assert tools["eco_ping"].input_schema["properties"]["check_api"]["default"] is False
        assert tools["eco_get_location"].input_schema["properties"]["children_offset"]["default"] == 0
        for name, args in (("eco_get_location", {"name": "HARV"}), ("eco_get_release", {"release": "RELEASE-2025"}),
                           ("eco_get_prototype_dataset", {"uuid": RECORDED_PROTO_UUID}),
                           ("eco_list_releases", {}), ("eco_get_site", {"site": "HARV"})):
            omitted = await _ok(client, tools, name, args)
            filled = await _ok(client, tools, name, _filled(tools[name], args))
            omitted.pop("source"), filled.pop("source")  # origin: the second call may come from the cache
            assert filled == omitted, name
        retired = (await _ok(client, tools, "eco_search_products", {"status": "RETIRED", "limit": 1}))["items"]
        code = {"query": retired[0]["productCode"]}  # a bare code finds its product whatever its status
        omitted = await _ok(client, tools, "eco_search_products", code)
        filled = await _ok(client, tools, "eco_search_products", _filled(tools["eco_search_products"], code))
        assert filled["items"] == omitted["items"] != []
        ping = await _ok(client, tools, "eco_ping", _filled(tools["eco_ping"], {}))
        assert ping["api"] is None  # check_api's stated default is what omitting it means


# -- 2. eco_graphql's limits as the spec says -------------------------------------------------

def _nested(depth: int) -> str:
    inner = "locationName"
    for _ in range(depth - 1):
        inner = f"locationChildHierarchy {{ {inner} }}"
    return f'{{ locationHierarchy(locationName: "HARV") {{ {inner} }} }}'


async def test_graphql_publishes_the_8000_character_bound_and_names_the_errors_a_caller_gets(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        tool = tools["eco_graphql"]
        assert tool.input_schema["properties"]["query"]["maxLength"] == sim_cfg.limits.graphql_max_query_chars == 8000
        assert "invalid_argument" in tool.description and "query_too_large" in tool.description
        too_long = "{ sites { siteCode } }" + " " * 8000
        err = assert_error(await client.call_tool("eco_graphql", {"query": too_long}), "invalid_argument")
        assert "query" in err["message"] and err["details"]["maximum"] == 8000
        err = assert_error(await client.call_tool("eco_graphql", {"query": _nested(9)}), "invalid_argument")
        assert "depth" in err["message"] and err["details"]["limit"] == 8


# -- 3. resolved echoes every resolution ------------------------------------------------------

async def test_site_codes_given_as_codes_are_echoed_in_resolved_by_find_locations_and_list_files(
        http_server, sim_cfg, sim, sim_token, active_config):  # noqa: F811
    async with token_session(http_server, sim, active_config, sim_token,
                             server__allow_insecure_header_token=True) as (client, tools):
        found = await _ok(client, tools, "eco_find_locations", {
            "site_codes": ["harv", "Bartlett Experimental Forest"], "location_type": "TOWER"})
        assert [(e["input"], e["siteCode"], e["matchedBy"]) for e in found["resolved"]["siteCodes"]] == [
            ("harv", "HARV", "code"), ("Bartlett Experimental Forest", "BART", "name")]
        assert [r["locationName"] for r in found["roots"]] == ["HARV", "BART"]
        listed = await _ok(client, tools, "eco_list_files", {
            "product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05", "detail": "summary"})
        assert [(e["input"], e["siteCode"], e["matchedBy"]) for e in listed["resolved"]["siteCodes"]] == [
            ("HARV", "HARV", "code")]


# -- 6. eco_ping during an upstream 429 --------------------------------------------------------

async def test_ping_during_an_upstream_429_reports_the_rate_limit_not_a_refused_token(
        http_server, sim_cfg, fresh_sim, sim_token, active_config):  # noqa: F811
    async with token_session(http_server, fresh_sim, active_config, sim_token, server__allow_insecure_header_token=True,
                             eco__token_for_public_endpoints=True) as (client, tools):
        healthy = await _ok(client, tools, "eco_ping", {"check_api": True})
        assert healthy["api"]["tokenAccepted"] is True
        limit = healthy["rateLimit"]["limit"]
        fresh_sim.faults.add("rate_limit", route=r"^/api/v0/taxonomy", retry_after=60)
        limited = await _ok(client, tools, "eco_ping", {"check_api": True})
    api = limited["api"]
    assert api["reachable"] is True and api["errorCode"] == "rate_limited"
    assert api["tokenAccepted"] is None  # a 429 says nothing about the token
    assert api["retryAfterSeconds"] == 60
    # The limit known for this token stays; the 429 says the budget is spent.
    assert limited["rateLimit"]["limit"] == limit and limited["rateLimit"]["remaining"] == 0


# -- 8. an ignored token header is said once, the same way, everywhere ------------------------

async def test_every_tool_needing_a_token_says_the_plain_http_header_was_ignored_and_which_setting_allows_it(
        http_server, sim_cfg, sim, sim_token, active_config):  # noqa: F811
    async with token_session(http_server, sim, active_config, sim_token) as (client, tools):
        ping = await _ok(client, tools, "eco_ping", {})
        [said] = [n for n in ping["notes"] if "X-API-Token header was ignored" in n]
        assert "server.allow_insecure_header_token" in said and "server.public_base_url" in said
        needing = {"eco_list_files": {"product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"},
                   "eco_get_sample": {"sample_uuid": "x"},
                   "eco_describe_tables": {"product": "DP1.10003.001"},
                   "eco_stack_tables": {"product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"}}
        assert {n for n, t in tools.items() if (t.meta or {}).get("requiresToken")} <= set(needing)
        needing = {n: a for n, a in needing.items() if n in tools}
        for name, args in needing.items():
            err = assert_error(await client.call_tool(name, args), "auth_required")
            assert err["hint"] == said, name
            assert err["details"]["tokenHeaderIgnored"] is True and "header was ignored" in err["message"]
            assert "Set an upstream API token" not in err["hint"]


# -- 7. suggestions that help -----------------------------------------------------------------

def _suggested(result: Any) -> list[str]:
    return assert_error(result, "not_found")["details"]["didYouMean"]


async def test_a_name_or_code_one_character_off_is_offered_the_near_ones_first(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    block = sim.state.locations.block("HARV")
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        assert _suggested(await client.call_tool("eco_get_site", {"site": "Harvrd Forest"}))[0] == "HARV"
        assert _suggested(await client.call_tool("eco_get_product", {"product": "DP1.00041.002"}))[0] == "DP1.00041.001"
        found = await _ok(client, tools, "eco_search_products", {"query": "DP1.00041.002"})
        assert found["items"] == [] and found["didYouMean"][0] == "DP1.00041.001"
        # A plot name in the wrong case twice over: its site's subtree holds the right spelling.
        assert _suggested(await client.call_tool("eco_get_location", {"name": "harv_001.baseplot.all"}))[0] == (
            "HARV_001.basePlot.all")
        walked = await _ok(client, tools, "eco_find_locations", {"root": "HARV", "include_coordinates": False})
        names = {i["locationName"] for i in walked["items"]}
        assert f"TOWER{block}" in names and f"SOILAR{block + 311}" in names
        # Tower and soil array names do not say their site: the subtrees read so far are searched.
        assert _suggested(await client.call_tool("eco_get_location", {"name": f"TOWER{block + 1}"}))[0] == (
            f"TOWER{block}")
        typo = f"SOILAR{block + 311}"[:-2] + f"SOILAR{block + 311}"[-1]  # one digit left out
        assert f"SOILAR{block + 311}" in _suggested(await client.call_tool("eco_find_locations", {"root": typo}))
