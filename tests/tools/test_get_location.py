"""eco_get_location against the simulator: the record field by field, every section, pruning,
children paging, history, name case rules, request counts and bad inputs; and one workflow
through the MCP SDK client over HTTP.

The tests up to the "stored subtrees" line run before the subtree refresh (the fallback path:
the record and the hierarchy from cached upstream requests); the ones after it, the HTTP
workflow included, ask for `stored_subtrees` (every site's subtree in the location catalog)."""

from __future__ import annotations

from collections import Counter

import pytest
from mcp import Client

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of, sim_config
from tests.tools.location_support import stored_subtrees, subtrees_hidden, without_coordinates  # noqa: F401


def _node(sim, name: str) -> dict:
    return sim.state.locations.get(name)


def _below(sim, name: str, depth: int) -> list[dict]:
    locs = sim.state.locations
    out, level = [], [locs.get(name)]
    for _ in range(depth):
        level = [c for n in level for c in locs.children(n)]
        out += level
    return out


async def test_default_is_the_record_with_properties_from_one_request(run_tool, sim):
    out = await run_tool("eco_get_location", {"name": "harv"})
    assert out.requests <= 1
    body = out.ok
    node = _node(sim, "HARV")
    assert body["locationName"] == "HARV" and body["resolved"]["name"] == {"input": "harv", "locationName": "HARV"}
    for key in ("locationDescription", "locationType", "domainCode", "siteCode", "locationDecimalLatitude",
                "locationDecimalLongitude", "locationElevation", "locationUtmEasting", "locationUtmNorthing",
                "locationUtmHemisphere", "locationUtmZone", "alphaOrientation", "zOffset"):
        assert body[key] == node[key], key
    assert body["locationProperties"] == {k: v for k, v in node["_props"]}
    assert body["locationPropertiesRaw"][0] == {"locationPropertyName": f"Value for {node['_props'][0][0]}",
                                                "locationPropertyValue": node["_props"][0][1]}
    assert body["propertyCount"] == len(node["_props"])
    assert body["locationParent"] == node["_parent"] and body["locationParentUrl"].endswith("/locations/D01")
    assert body["activePeriods"] == [{"activatedDate": None, "deactivatedDate": None}]
    assert body["hasPolygon"] is False and body["locationPolygon"] is None
    for absent in ("parentChain", "childrenByType", "children", "childrenPage", "locationHistory",
                   "hierarchyNodesScanned"):
        assert body[absent] is None, absent
    assert body["historyTruncated"] is False
    assert body["nextSteps"][0]["arguments"] == {"name": "HARV", "include": ["children"]}


async def test_hierarchy_gives_the_parent_chain_to_realm_and_children_by_type(run_tool, sim):
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    body = (await run_tool("eco_get_location", {"name": tower, "include": ["hierarchy"]})).ok
    assert [p["locationName"] for p in body["parentChain"]] == ["HARV", "D01", "REALM"]
    assert body["parentChain"][-1]["locationType"] == "FIELD"
    below = _below(sim, tower, 3)
    assert body["childrenByType"] == dict(Counter(n["locationType"] for n in below))
    assert body["hierarchyNodesScanned"] == len(below)
    assert body["children"] is None and body["locationProperties"] is None


async def test_children_are_paged_pruned_by_type_and_bounded_by_depth(run_tool, sim):
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    first = (await run_tool("eco_get_location", {"name": tower, "include": ["children"], "children_limit": 5})).ok
    below = _below(sim, tower, 3)
    assert first["childrenPage"]["total"] == len(below) and first["childrenPage"]["nextOffset"] == 5
    assert len(first["children"]) == 5 and first["children"][0]["depth"] == 1
    assert first["children"][0]["locationParent"] == tower and first["children"][0]["siteCode"] == "HARV"
    configs = (await run_tool("eco_get_location", {"name": tower, "include": ["children"], "location_type": "config",
                                                   "children_limit": 500})).ok
    expected = sorted(n["locationName"] for n in below if n["locationType"] == "CONFIG")
    assert sorted(c["locationName"] for c in configs["children"]) == expected
    assert configs["childrenByType"] == {"CONFIG": len(expected)}
    one = (await run_tool("eco_get_location", {"name": tower, "include": ["children"],
                                               "hierarchy_max_depth": 1})).ok
    assert {c["locationType"] for c in one["children"]} == {"LEVEL"}


async def test_all_sections_cost_two_requests_history_and_polygon_included(run_tool, sim):
    plot = "HARV_001.basePlot.all"
    out = await run_tool("eco_get_location", {"name": plot, "include": ["all"]})
    assert out.requests <= 2
    body = out.ok
    node = _node(sim, plot)
    assert body["hasPolygon"] is True and body["locationPolygon"] == node["_polygon"]
    hist = body["locationHistory"]
    assert [h["current"] for h in hist] == [True, False]
    assert hist[0]["latitude"] == node["locationDecimalLatitude"]
    assert hist[1]["endDate"] == hist[0]["startDate"]
    assert body["historyTruncated"] is False
    assert [p["locationName"] for p in body["parentChain"]] == ["HARV", "D01", "REALM"]
    assert body["locationProperties"]["Plot size"] == 400
    again = await run_tool("eco_get_location", {"name": plot, "include": ["all"]})
    assert again.requests == 0


async def test_realm_children_of_type_site_come_from_the_catalog(run_tool, sim):
    out = await run_tool("eco_get_location", {"name": "REALM", "include": ["children"], "location_type": "SITE",
                                              "children_limit": 500})
    body = out.ok
    assert out.requests <= 1  # the REALM record itself; the children are catalog rows
    assert sorted(c["locationName"] for c in body["children"]) == sorted(sim.world.sites)
    assert body["childrenByType"] == {"SITE": len(sim.world.sites)}


async def test_a_domain_with_a_type_is_one_pruned_request(run_tool, sim):
    body = (await run_tool("eco_get_location", {"name": "d01", "include": ["children"],
                                                "location_type": "tower"})).ok
    sites = [c for c, s in sim.world.sites.items() if s["domainCode"] == "D01" and not s["_aquatic"]]
    towers = {f"TOWER{sim.state.locations.block(c)}" for c in sites}
    assert {c["locationName"] for c in body["children"] if c["locationType"] == "TOWER"} == towers


@pytest.mark.parametrize(("arguments", "field"), [
    ({"name": "REALM", "include": ["children"]}, "location_type"),
    ({"name": "D01", "include": ["hierarchy"]}, "location_type"),
    ({"name": "HARV", "include": ["everything"]}, "include"),
    ({"name": "HARV", "children_limit": 501}, "children_limit"),
    ({"name": "HARV", "hierarchy_max_depth": 0}, "hierarchy_max_depth"),
    ({"name": ""}, "name"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(run_tool, arguments, field):
    out = await run_tool("eco_get_location", arguments)
    error_of(out, "invalid_argument", field)


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("eco_get_location", {"name": ".."}, "name"),
    ("eco_get_location", {"name": "HARV/../REALM"}, "name"),
    ("eco_get_location", {"name": "."}, "name"),
    ("eco_get_location", {"name": "%2e%2e%2f"}, "name"),
    ("eco_get_location", {"name": "HARV%2F..%2FREALM"}, "name"),
    ("eco_get_location", {"name": "\x82\x1c"}, "name"),  # a control character, the name stripped before use
    ("eco_find_locations", {"root": ".."}, "root"),
])
async def test_a_name_that_is_not_one_path_segment_is_invalid_argument_before_any_request(
        run_tool, sim, tool, arguments, field):
    # '..' went out as a dot segment: the request reached the collapsed route /api/v0.
    sim.requests.clear()
    out = await run_tool(tool, arguments)
    assert error_of(out, "invalid_argument", field)["details"]["field"] == field
    assert out.requests == 0 and sim.requests.count("") == 0


async def test_names_are_case_sensitive_except_site_and_domain_codes(run_tool, sim):
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    err = error_of(await run_tool("eco_get_location", {"name": tower.lower()}), "not_found", "name")
    assert tower in err["hint"]
    unknown = error_of(await run_tool("eco_get_location", {"name": "HARVV"}), "not_found", "name")
    assert unknown["details"]["didYouMean"][0] == "HARV"
    assert (await run_tool("eco_get_location", {"name": "d01"})).ok["locationName"] == "D01"


# -- stored subtrees (every test below runs after the subtree refresh) -------------------------

SECTIONS_STORED = ["properties", "hierarchy", "children", "polygon"]


@pytest.mark.parametrize("which", ["site", "tower", "plot", "config"])
async def test_a_stored_node_answers_like_the_upstream_without_a_request(run_tool, sim, stored_subtrees,  # noqa: F811
                                                                        which):
    block = sim.state.locations.block("HARV")
    name = {"site": "HARV", "tower": f"TOWER{block}", "plot": "HARV_002.basePlot.bet",
            "config": f"CFGLOC{block + 330}"}[which]
    args = {"name": name, "include": SECTIONS_STORED, "children_limit": 500, "hierarchy_max_depth": 12}
    out = await run_tool("eco_get_location", args)
    assert out.requests == 0
    body = out.ok
    assert body["source"]["origin"] == "catalog" and body["source"]["endpoints"] == []
    assert any("stored subtree of HARV" in n for n in body["notes"])
    with subtrees_hidden():
        expected = (await run_tool("eco_get_location", args)).ok
    # The stored answer says where it came from; the rest, envelope included, is the same.
    source, notes = expected.pop("source"), body.pop("notes")
    assert source["origin"] == "upstream"
    assert expected.pop("notes") == [n for n in notes if "stored subtree" not in n]
    # Stored children carry their coordinates; the upstream's hierarchy answer has none.
    children = body.pop("children")
    assert without_coordinates(children) == without_coordinates(expected.pop("children"))
    assert {k: v for k, v in body.items() if k in expected} == expected
    for child in children:
        node = sim.state.locations.get(child["locationName"])
        assert (child["latitude"], child["longitude"]) == (node["locationDecimalLatitude"],
                                                           node["locationDecimalLongitude"])


async def test_history_is_the_one_upstream_request_of_a_stored_node_asked_for_everything(run_tool, sim,
                                                                                        stored_subtrees):  # noqa: F811
    out = await run_tool("eco_get_location", {"name": "HARV_001.basePlot.all", "include": ["all"]})
    assert out.requests == 1  # history=true; the hierarchy and children come from the catalog
    body = out.ok
    assert [h["current"] for h in body["locationHistory"]] == [True, False]
    assert [p["locationName"] for p in body["parentChain"]] == ["HARV", "D01", "REALM"]
    assert body["locationPolygon"] == sim.state.locations.get("HARV_001.basePlot.all")["_polygon"]
    assert body["source"]["origin"] == "mixed"


async def test_a_domain_pruned_to_a_type_comes_from_the_stored_subtrees(run_tool, sim, stored_subtrees):  # noqa: F811
    out = await run_tool("eco_get_location", {"name": "D01", "include": ["hierarchy", "children"],
                                              "location_type": "TOWER"})
    assert out.requests == 1  # D01's own record: the catalog holds none for domains
    body = out.ok
    sites = sorted(c for c, s in sim.world.sites.items() if s["domainCode"] == "D01" and not s["_aquatic"])
    assert [(c["locationName"], c["siteCode"], c["locationParent"]) for c in body["children"]] == [
        (f"TOWER{sim.state.locations.block(c)}", c, c) for c in sites]
    assert body["childrenByType"] == {"TOWER": len(sites)} and body["parentChain"] == [
        {"locationName": "REALM", "locationType": "FIELD"}]


async def test_towers_of_harv_then_one_with_its_hierarchy_then_its_children_by_type_over_http(
        http_server, sim_cfg, sim, active_config, stored_subtrees):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            found = assert_valid_tool_result(tools["eco_find_locations"], await client.call_tool(
                "eco_find_locations", {"root": "HARV", "location_type": "tower"}))
            assert [i["locationName"] for i in found["items"]] == [tower]
            assert found["items"][0]["latitude"] is not None
            step = next(s["arguments"] for s in found["nextSteps"] if s["tool"] == "eco_get_location")
            assert step == {"name": tower, "include": ["hierarchy", "children"]}
            got = await client.call_tool("eco_get_location", {"name": tower, "include": ["hierarchy"]})
            record = assert_valid_tool_result(tools["eco_get_location"], got)
            assert [p["locationName"] for p in record["parentChain"]] == ["HARV", "D01", "REALM"]
            assert got.meta["io.eco-mcp/upstream"]["requests"] == 0  # record and tree: stored subtree
            by_type = record["childrenByType"]
            assert set(by_type) == {"LEVEL", "BOOM", "CONFIG"}
            booms = assert_valid_tool_result(tools["eco_get_location"], await client.call_tool(
                "eco_get_location", {"name": tower, "include": ["children"], "location_type": "BOOM"}))
            assert len(booms["children"]) == by_type["BOOM"] == booms["childrenPage"]["total"]
            assert {c["locationType"] for c in booms["children"]} == {"BOOM"}
