"""eco_search_products over the full simulated catalog, through the gateway's pipeline."""

from __future__ import annotations

from tests.tools.conftest import error_of


async def test_soil_temperature_search_gives_summaries_matching_the_simulator_field_by_field(run_tool, sim):
    out = await run_tool("eco_search_products", {"query": "soil temperature"})
    body = out.ok
    assert out.requests == 0
    top = body["items"][0]
    assert top["productCode"] == "DP1.00041.001"
    p = sim.world.products[top["productCode"]]
    assert top["productName"] == p["productName"] == "Soil temperature"
    assert top["productStatus"] == p["productStatus"]
    assert top["productScienceTeamAbbr"] == p["productScienceTeamAbbr"]
    assert top["themes"] == p["themes"] and top["level"] == 1
    assert top["productHasExpanded"] == p["productHasExpanded"]
    avail = sim.world.availability(top["productCode"])
    assert top["siteCount"] == len(avail)
    first = min(m[0] for m in avail.values())
    last = max(m[-1] for m in avail.values())
    assert top["monthRange"] == f"{first}/{last}"
    assert not {"firstMonth", "lastMonth"} & set(top)  # the range says both
    assert top["latestRelease"] == sim.world.product_releases(top["productCode"])[-1]
    assert top["score"] > 0 and "name" in top["matchedOn"]
    assert body["indexSource"] in ("graphql", "rest") and body["indexAgeSeconds"] >= 0
    assert body["didYouMean"] is None
    assert body["source"]["origin"] == "catalog"


async def test_facets_count_the_whole_filtered_set_not_the_page(run_tool):
    body = (await run_tool("eco_search_products", {"science_team": "TIS", "limit": 1})).ok
    assert len(body["items"]) == 1
    assert body["facets"]["teams"] == {"TIS": body["page"]["total"]}
    assert sum(body["facets"]["statuses"].values()) == body["page"]["total"] > 1
    assert set(body["facets"]) == {"themes", "teams", "levels", "statuses"}


async def test_paging_walks_every_match_to_the_end_without_repeats(run_tool):
    seen: list[str] = []
    offset = 0
    while offset is not None:
        body = (await run_tool("eco_search_products", {"status": "ALL", "limit": 40, "offset": offset})).ok
        seen += [i["productCode"] for i in body["items"]]
        assert body["page"]["returned"] == len(body["items"])
        offset = body["page"]["nextOffset"]
    assert len(seen) == len(set(seen)) == body["page"]["total"] == 197


async def test_nothing_matching_gives_did_you_mean_suggestions(run_tool):
    body = (await run_tool("eco_search_products", {"query": "zzqx soyl tempreture"})).ok
    assert body["items"] == [] and body["page"]["total"] == 0
    assert body["didYouMean"]


async def test_next_steps_offer_availability_and_detail_of_the_top_hit_and_the_next_page(run_tool):
    body = (await run_tool("eco_search_products", {"query": "temperature", "limit": 2})).ok
    top = body["items"][0]["productCode"]
    tools = {s["tool"]: s["arguments"] for s in body["nextSteps"]}
    assert tools["eco_get_availability"] == {"product": top}
    assert tools["eco_get_product"]["product"] == top
    assert tools["eco_search_products"] == {"query": "temperature", "limit": 2, "offset": 2}


async def test_site_filter_accepts_a_name_and_echoes_the_resolution(run_tool, sim):
    body = (await run_tool("eco_search_products", {"site": "Harvard Forest & Quabbin Watershed", "limit": 100})).ok
    assert body["resolved"]["site"]["siteCode"] == "HARV"
    assert body["resolved"]["site"]["matchedBy"] == "name"
    codes = {i["productCode"] for i in body["items"]}
    assert codes and all("HARV" in sim.world.availability(c) for c in codes)


async def test_camel_case_spellings_give_the_same_answer(run_tool):
    snake = (await run_tool("eco_search_products", {"science_team": "AOS", "has_expanded": True})).ok
    camel = (await run_tool("eco_search_products", {"scienceTeam": "AOS", "hasExpanded": True})).ok
    assert snake["items"] == camel["items"]


async def test_release_and_month_window_filters_keep_products_with_data_there(run_tool, sim):
    body = (await run_tool("eco_search_products", {
        "release": "RELEASE-2022", "available_from": "2019-01", "available_to": "2019-12", "limit": 100})).ok
    assert body["resolved"]["release"]["release"] == "RELEASE-2022"
    for item in body["items"]:
        first, last = item["monthRange"].split("/")
        assert first <= "2019-12" and last >= "2019-01"


async def test_a_bare_code_of_a_future_product_is_found_despite_the_default_status(run_tool, sim):
    future = next(c for c, p in sim.world.products.items() if p["productStatus"] == "FUTURE")
    body = (await run_tool("eco_search_products", {"query": future})).ok
    assert [i["productCode"] for i in body["items"]] == [future]
    assert body["items"][0]["matchedOn"] == ["productCode"]


async def test_limit_out_of_bounds_gives_invalid_argument_naming_limit(run_tool):
    for bad in (0, 101):
        err = error_of(await run_tool("eco_search_products", {"limit": bad}), "invalid_argument", "limit")
        assert err["details"]["field"] == "limit"


async def test_wrong_types_give_invalid_argument_naming_the_field(run_tool):
    error_of(await run_tool("eco_search_products", {"level": "high"}), "invalid_argument", "level")
    error_of(await run_tool("eco_search_products", {"offset": -1}), "invalid_argument", "offset")
    error_of(await run_tool("eco_search_products", {"science_team": "XYZ"}), "invalid_argument", "science_team")
    error_of(await run_tool("eco_search_products", {"available_from": "2020-13"}), "invalid_argument",
             "available_from")
    error_of(await run_tool("eco_search_products", {"status": "DEAD"}), "invalid_argument", "status")
    error_of(await run_tool("eco_search_products", {"domain_code": "D42"}), "invalid_argument", "domain_code")
    error_of(await run_tool("eco_search_products", {"sort": "score"}), "invalid_argument", "sort")
    error_of(await run_tool("eco_search_products", {"level": 7}), "invalid_argument", "level")


async def test_unknown_argument_is_named_with_the_valid_ones(run_tool):
    err = error_of(await run_tool("eco_search_products", {"qurey": "soil"}), "invalid_argument", "qurey")
    assert "query" in err["details"]["validArguments"]


async def test_conflicting_month_window_gives_invalid_argument(run_tool):
    error_of(await run_tool("eco_search_products", {"available_from": "2022-01", "available_to": "2021-01"}),
             "invalid_argument", "available_from")


async def test_provisional_as_release_is_refused_with_the_valid_releases(run_tool):
    err = error_of(await run_tool("eco_search_products", {"release": "PROVISIONAL"}), "invalid_argument", "release")
    assert "RELEASE-2026" in err["details"]["validReleases"]


async def test_unknown_release_gives_not_found_with_valid_releases(run_tool):
    err = error_of(await run_tool("eco_search_products", {"release": "RELEASE-1999"}), "not_found", "release")
    assert err["details"]["validReleases"][0] == "RELEASE-2021"


async def test_unknown_site_code_gives_not_found_and_ambiguous_name_gives_candidates(run_tool):
    error_of(await run_tool("eco_search_products", {"site": "ZZZZ"}), "not_found", "site")
    err = error_of(await run_tool("eco_search_products", {"site": "Creek"}), "ambiguous_input", "site")
    assert len(err["details"]["candidates"]) > 1
