"""eco_search_sites over the full simulated catalog, through the gateway's pipeline."""

from __future__ import annotations

from catalog.sites import haversine_km
from tests.tools.conftest import error_of


async def test_site_code_query_gives_the_site_field_by_field_with_no_upstream_request(run_tool, sim):
    out = await run_tool("eco_search_sites", {"query": "harv"})
    assert out.requests == 0
    body = out.ok
    item = body["items"][0]
    s = sim.world.sites["HARV"]
    assert item["siteCode"] == "HARV" and item["matchedOn"] == ["siteCode"]
    for key in ("siteName", "siteType", "stateCode", "stateName", "domainCode", "domainName", "siteLatitude",
                "siteLongitude"):
        assert item[key] == s[key], key
    assert item["productCount"] == len(sim.world.site_products("HARV"))
    assert not {"distanceKm", "elevation", "utm"} & set(item)  # only when asked for
    assert body["indexSource"] in ("graphql", "rest") and body["indexAgeSeconds"] >= 0
    assert {"tool": "eco_get_site", "arguments": {"site": "HARV"}} == {
        k: v for k, v in body["nextSteps"][0].items() if k != "why"}


async def test_proximity_search_is_nearest_first_with_distances_inside_the_radius(run_tool, sim):
    body = (await run_tool("eco_search_sites", {"latitude": 42.5, "longitude": -72.2, "radius_km": 300})).ok
    dists = [i["distanceKm"] for i in body["items"]]
    assert body["items"][0]["siteCode"] == "HARV"
    assert dists == sorted(dists) and all(d <= 300 for d in dists)
    for item in body["items"]:
        s = sim.world.sites[item["siteCode"]]
        assert abs(item["distanceKm"] - haversine_km(42.5, -72.2, s["siteLatitude"], s["siteLongitude"])) < 0.1
    inside = [c for c, s in sim.world.sites.items()
              if haversine_km(42.5, -72.2, s["siteLatitude"], s["siteLongitude"]) <= 300]
    assert body["page"]["total"] == len(inside)


async def test_include_elevation_costs_one_cached_request_and_matches_the_location_records(run_tool, sim):
    first = await run_tool("eco_search_sites", {"state_code": "MA", "include_elevation": True})
    assert first.meta["requests"] + first.meta["cacheHits"] == 1
    item = first.ok["items"][0]
    s = sim.world.sites[item["siteCode"]]
    assert item["elevation"] == s["_elevation"]
    east, north, zone, hemi = s["_utm"]
    assert item["utm"] == {"easting": east, "northing": north, "zone": zone, "hemisphere": hemi}
    again = await run_tool("eco_search_sites", {"state_code": "MA", "includeElevation": True})
    assert again.requests == 0 and again.meta["cacheHits"] == 1
    assert again.ok["items"] == first.ok["items"]


async def test_filters_and_facets_describe_the_whole_filtered_set(run_tool, sim):
    body = (await run_tool("eco_search_sites", {"domain_code": "D10", "limit": 1})).ok
    expected = sorted(c for c, s in sim.world.sites.items() if s["domainCode"] == "D10")
    assert body["page"]["total"] == len(expected) == sum(body["facets"]["domains"].values())
    assert body["facets"]["domains"] == {"D10": len(expected)}
    assert sum(body["facets"]["siteTypes"].values()) == len(expected)


async def test_paging_walks_all_81_sites(run_tool):
    seen, offset = [], 0
    while offset is not None:
        body = (await run_tool("eco_search_sites", {"limit": 30, "offset": offset})).ok
        seen += [i["siteCode"] for i in body["items"]]
        offset = body["page"]["nextOffset"]
    assert len(seen) == len(set(seen)) == 81


async def test_product_filter_accepts_a_name_and_suggests_availability_at_the_top_site(run_tool, sim):
    body = (await run_tool("eco_search_sites", {"product": "Soil temperature"})).ok
    assert body["resolved"]["product"]["productCode"] == "DP1.00041.001"
    codes = [i["siteCode"] for i in body["items"]]
    assert set(codes) == set(sim.world.availability("DP1.00041.001"))
    step = body["nextSteps"][0]
    assert step["tool"] == "eco_get_availability"
    assert step["arguments"] == {"product": "DP1.00041.001", "site": codes[0]}


async def test_typos_in_name_words_still_find_the_site_and_nonsense_gives_did_you_mean(run_tool):
    body = (await run_tool("eco_search_sites", {"query": "Harvrd Forrest Quabin"})).ok
    assert [i["siteCode"] for i in body["items"]] == ["HARV"] and body["didYouMean"] is None
    empty = (await run_tool("eco_search_sites", {"query": "qqqq zzzz"})).ok
    assert empty["items"] == [] and empty["didYouMean"] is not None


async def test_bad_inputs_give_invalid_argument_naming_the_field(run_tool):
    cases = [({"latitude": 91, "longitude": 0}, "latitude"), ({"longitude": -181, "latitude": 0}, "longitude"),
             ({"radius_km": 0}, "radius_km"), ({"radius_km": 5001}, "radius_km"), ({"limit": 101}, "limit"),
             ({"state_code": "MAS"}, "state_code"), ({"domain_code": "D21"}, "domain_code"),
             ({"site_type": "TOWER"}, "site_type"), ({"latitude": 42.0}, "longitude"),
             ({"include_elevation": "maybe"}, "include_elevation"), ({"nearby": True}, "nearby")]
    for args, field in cases:
        error_of(await run_tool("eco_search_sites", args), "invalid_argument", field)


async def test_ambiguous_product_name_and_provisional_release_are_refused(run_tool):
    err = error_of(await run_tool("eco_search_sites", {"product": "temperature"}), "ambiguous_input", "product")
    assert err["details"]["candidates"]
    error_of(await run_tool("eco_search_sites", {"release": "PROVISIONAL"}), "invalid_argument", "release")
    error_of(await run_tool("eco_search_sites", {"product": "DP9.99999.001"}), "not_found", "product")
