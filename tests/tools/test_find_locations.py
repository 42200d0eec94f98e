"""eco_find_locations against the simulator: catalog fast paths, site walks, type filters,
proximity, the batched coordinate lookup, upstream request counts and every bad input.

The tests up to the "stored subtrees" line run before the subtree refresh (the fallback path: a
site walk is one cached hierarchy=true request); the ones after it ask for `stored_subtrees`
(every site's subtree in the location catalog, kept for the rest of the module)."""

from __future__ import annotations

from collections import Counter

import pytest

from catalog.sites import haversine_km
from eco_core.memo import memos
from tests.tools.conftest import error_of
from tests.tools.location_support import stored_subtrees, subtrees_hidden  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
def _no_remembered_coordinates():
    memos.drop_all()  # coordinates from GraphQL are remembered per process: request counts start from none


def _tree(sim, name: str) -> list[dict]:
    """Every node below `name` in the simulator's tree (what a full walk should see)."""
    locs = sim.state.locations
    out, todo = [], [locs.get(name)]
    while todo:
        node = todo.pop()
        for child in locs.children(node):
            out.append(child)
            todo.append(child)
    return out


async def test_realm_with_site_is_answered_from_the_catalog_without_a_request(run_tool, sim):
    out = await run_tool("eco_find_locations", {"root": "REALM", "location_type": "site", "limit": 200})
    body = out.ok
    assert out.requests == 0
    assert body["locationType"] == "SITE"  # as NEON spells it
    names = [i["locationName"] for i in body["items"]]
    assert names == sorted(sim.world.sites) and body["page"]["total"] == len(sim.world.sites)
    harv = next(i for i in body["items"] if i["locationName"] == "HARV")
    s = sim.world.sites["HARV"]
    assert (harv["latitude"], harv["longitude"]) == (s["siteLatitude"], s["siteLongitude"])
    assert harv["locationParent"] == s["domainCode"] and harv["siteCode"] == "HARV" and harv["depth"] == 2
    assert body["roots"] == [{"locationName": "REALM", "locationType": "FIELD", "fromCatalog": True,
                              "nodesScanned": len(sim.world.sites)}]
    assert body["typesAvailable"] is None
    assert body["nextSteps"][0]["arguments"] == {"root": names[0]}


async def test_realm_with_domain_and_a_domain_with_site_come_from_the_catalog(run_tool, sim):
    out = await run_tool("eco_find_locations", {"location_type": "DOMAIN"})
    assert out.requests == 0
    assert [i["locationName"] for i in out.ok["items"]] == sorted(sim.world.domains)
    d01 = await run_tool("eco_find_locations", {"root": "d01", "location_type": "SITE"})
    assert d01.requests == 0
    expected = sorted(c for c, s in sim.world.sites.items() if s["domainCode"] == "D01")
    assert [i["locationName"] for i in d01.ok["items"]] == expected
    assert d01.ok["resolved"]["root"] == {"input": "d01", "locationName": "D01"}


async def test_a_site_walk_reports_types_available_costs_one_request_then_none(run_tool, sim):
    first = await run_tool("eco_find_locations", {"root": "harv", "include_coordinates": False, "limit": 200})
    assert first.requests <= 1
    body = first.ok
    nodes = _tree(sim, "HARV")
    assert body["typesAvailable"] == dict(Counter(n["locationType"] for n in nodes))
    assert body["hierarchyNodesScanned"] == len(nodes) == body["page"]["total"]
    assert body["roots"] == [{"locationName": "HARV", "locationType": "SITE", "fromCatalog": False,
                              "nodesScanned": len(nodes)}]
    tower = next(i for i in body["items"] if i["locationType"] == "TOWER")
    assert tower["depth"] == 1 and tower["locationParent"] == "HARV" and tower["siteCode"] == "HARV"
    assert tower["latitude"] is None  # include_coordinates false: no lookup
    assert {"tool": "eco_find_locations", "arguments": {"root": "HARV", "location_type": "TOWER"},
            "why": body["nextSteps"][-1]["why"]} in body["nextSteps"]
    again = await run_tool("eco_find_locations", {"root": "HARV", "location_type": "tower",
                                                   "include_coordinates": False})
    assert again.requests == 0
    assert [i["locationName"] for i in again.ok["items"]] == [tower["locationName"]]
    assert again.ok["locationType"] == "TOWER" and again.ok["typesAvailable"] is None


async def test_max_depth_limits_the_walk_and_query_matches_name_or_description(run_tool, sim):
    shallow = (await run_tool("eco_find_locations", {"root": "HARV", "max_depth": 1,
                                                      "include_coordinates": False, "limit": 200})).ok
    direct = [c["locationName"] for c in sim.state.locations.children(sim.state.locations.get("HARV"))]
    assert sorted(i["locationName"] for i in shallow["items"]) == sorted(direct)
    assert {i["depth"] for i in shallow["items"]} == {1}
    hut = (await run_tool("eco_find_locations", {"root": "HARV", "query": "instrument hut",
                                                  "include_coordinates": False})).ok
    assert [i["locationType"] for i in hut["items"]] == ["HUT"]
    soil = (await run_tool("eco_find_locations", {"root": "HARV", "location_type": "soil_array",
                                                   "include_coordinates": False})).ok
    assert soil["page"]["total"] == 5 and soil["locationType"] == "SOIL ARRAY"


async def test_coordinates_for_a_page_come_from_one_batched_graphql_request(run_tool, sim):
    await run_tool("eco_find_locations", {"root": "HARV", "include_coordinates": False})  # warm the walk
    out = await run_tool("eco_find_locations", {"root": "HARV", "location_type": "OS PLOT - MAM"})
    assert out.requests == 1
    items = out.ok["items"]
    assert items and out.ok["locationType"] == "OS Plot - mam"
    for item in items:
        node = sim.state.locations.get(item["locationName"])
        assert (item["latitude"], item["longitude"]) == (node["locationDecimalLatitude"],
                                                         node["locationDecimalLongitude"])
    paged = await run_tool("eco_find_locations", {"root": "HARV", "limit": 30})
    assert paged.requests == 1 and all(i["latitude"] is not None for i in paged.ok["items"])
    warm = await run_tool("eco_find_locations", {"root": "HARV", "limit": 30})
    assert warm.requests == 0  # the walk is cached and the page's coordinates remembered
    assert [i["latitude"] for i in warm.ok["items"]] == [i["latitude"] for i in paged.ok["items"]]


async def test_site_codes_walk_several_sites_and_proximity_sorts_nearest_first(run_tool, sim):
    harv = sim.world.sites["HARV"]
    lat, lon = harv["siteLatitude"], harv["siteLongitude"]
    out = await run_tool("eco_find_locations", {"site_codes": ["HARV", "bart"], "location_type": "TOWER",
                                                "latitude": lat, "longitude": lon, "radius_km": 500})
    body = out.ok
    assert [r["locationName"] for r in body["roots"]] == ["HARV", "BART"]
    dists = [i["distanceKm"] for i in body["items"]]
    assert len(dists) == 2 and dists == sorted(dists)
    assert body["items"][0]["siteCode"] == "HARV"
    for item in body["items"]:
        assert item["distanceKm"] == pytest.approx(haversine_km(lat, lon, item["latitude"], item["longitude"]),
                                                   abs=0.01)
    near = (await run_tool("eco_find_locations", {"site_codes": ["HARV", "BART"], "location_type": "TOWER",
                                                   "latitude": lat, "longitude": lon, "radius_km": 5})).ok
    assert [i["siteCode"] for i in near["items"]] == ["HARV"]


async def test_realm_with_a_point_walks_only_the_sites_near_it(run_tool, sim):
    harv = sim.world.sites["HARV"]
    body = (await run_tool("eco_find_locations", {"location_type": "tower", "latitude": harv["siteLatitude"],
                                                   "longitude": harv["siteLongitude"], "radius_km": 3})).ok
    assert [i["siteCode"] for i in body["items"]] == ["HARV"]
    assert 1 <= len(body["roots"]) < len(sim.world.sites)


async def test_too_many_sites_or_candidates_for_a_proximity_search_is_query_too_large_before_any_walk(run_tool):
    far = await run_tool("eco_find_locations", {"location_type": "TOWER"})
    err = error_of(far, "query_too_large", "location_type")
    assert far.requests == 0 and err["details"]["maxSites"] == 20
    wide = await run_tool("eco_find_locations", {"location_type": "CONFIG", "latitude": 40.0, "longitude": -100.0,
                                                  "radius_km": 5000})
    error_of(wide, "query_too_large")
    assert wide.requests == 0


@pytest.mark.parametrize(("arguments", "field"), [
    ({"root": "REALM"}, "location_type"),
    ({"root": "D01"}, "location_type"),
    ({"site_codes": [f"S{i:03d}" for i in range(21)]}, "site_codes"),
    ({"root": "HARV", "radius_km": 0, "latitude": 1, "longitude": 1}, "radius_km"),
    ({"root": "HARV", "latitude": 42.5}, "longitude"),
    ({"root": "HARV", "longitude": -72.0}, "latitude"),
    ({"root": "HARV", "limit": 201}, "limit"),
    ({"root": "HARV", "max_depth": 13}, "max_depth"),
    ({"root": "HARV", "site_codes": ["BART"]}, "site_codes"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field(run_tool, arguments, field):
    out = await run_tool("eco_find_locations", arguments)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0


async def test_unknown_site_codes_and_roots_are_not_found_with_suggestions(run_tool):
    code = error_of(await run_tool("eco_find_locations", {"site_codes": ["HARX"]}), "not_found", "site_codes")
    assert any(s.startswith("HARV") for s in code["details"]["didYouMean"])
    root = error_of(await run_tool("eco_find_locations", {"root": "tower100450"}), "not_found", "root")
    assert "TOWER100450" in root["hint"]


# -- stored subtrees (every test below runs after the subtree refresh) -------------------------

async def test_a_stored_site_walk_costs_no_request_and_lists_what_the_upstream_walk_lists(
        run_tool, sim, stored_subtrees):  # noqa: F811
    out = await run_tool("eco_find_locations", {"root": "harv", "limit": 200})
    assert out.requests == 0  # the walk and the page's coordinates: all from the catalog
    body = out.ok
    nodes = _tree(sim, "HARV")
    assert body["roots"] == [{"locationName": "HARV", "locationType": "SITE", "fromCatalog": True,
                              "nodesScanned": len(nodes)}]
    assert body["typesAvailable"] == dict(Counter(n["locationType"] for n in nodes))
    assert body["source"]["origin"] == "catalog" and body["source"]["endpoints"] == []
    for item in body["items"]:
        node = sim.state.locations.get(item["locationName"])
        assert (item["latitude"], item["longitude"]) == (node["locationDecimalLatitude"],
                                                         node["locationDecimalLongitude"])
    # The fallback walk (hierarchy=true and one GraphQL lookup) lists the same page, field by field.
    with subtrees_hidden():
        upstream = (await run_tool("eco_find_locations", {"root": "harv", "limit": 200})).ok
    assert body["items"] == upstream["items"]
    assert upstream["source"]["origin"] == "mixed" and not upstream["roots"][0]["fromCatalog"]


async def test_stored_walks_below_a_tower_by_type_and_by_distance_cost_no_request(run_tool, sim,
                                                                                   stored_subtrees):  # noqa: F811
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    below = await run_tool("eco_find_locations", {"root": tower, "max_depth": 1, "include_coordinates": False})
    assert below.requests == 0
    assert [i["locationName"] for i in below.ok["items"]] == [
        c["locationName"] for c in sim.state.locations.children(sim.state.locations.get(tower))]
    assert below.ok["roots"][0] == {"locationName": tower, "locationType": "TOWER", "fromCatalog": True,
                                    "nodesScanned": len(below.ok["items"])}
    configs = await run_tool("eco_find_locations", {"site_codes": ["HARV", "BART"], "location_type": "config",
                                                    "limit": 200})
    assert configs.requests == 0
    assert configs.ok["page"]["total"] == sum(1 for site in ("HARV", "BART") for n in _tree(sim, site)
                                              if n["locationType"] == "CONFIG")
    harv = sim.world.sites["HARV"]
    lat, lon = harv["siteLatitude"], harv["siteLongitude"]
    near = await run_tool("eco_find_locations", {"location_type": "TOWER", "latitude": lat, "longitude": lon,
                                                 "radius_km": 100})
    assert near.requests == 0
    dists = [i["distanceKm"] for i in near.ok["items"]]
    assert near.ok["items"][0]["siteCode"] == "HARV" and dists == sorted(dists)
    for item in near.ok["items"]:
        assert item["distanceKm"] == pytest.approx(haversine_km(lat, lon, item["latitude"], item["longitude"]),
                                                   abs=0.01)


async def test_a_name_the_stored_subtrees_do_not_hold_falls_back_to_the_upstream(run_tool, stored_subtrees):  # noqa: F811
    out = await run_tool("eco_find_locations", {"root": "tower100450"})  # names are case-sensitive
    error_of(out, "not_found", "root")
    assert out.requests == 1


async def test_a_tower_name_one_digit_off_is_offered_the_stored_towers_nearest_it(run_tool, sim, stored_subtrees):  # noqa: F811
    memos.drop_all()  # no subtree remembered from an upstream walk: the stored names answer
    tower = f"TOWER{sim.state.locations.block('BART')}"
    out = await run_tool("eco_get_location", {"name": tower[:-1] + str((int(tower[-1]) + 1) % 10)})
    assert error_of(out, "not_found", "name")["details"]["didYouMean"][0] == tower
