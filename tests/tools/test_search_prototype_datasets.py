"""eco_search_prototype_datasets against the simulator's prototype list, through the gateway's pipeline."""

from __future__ import annotations

import pytest

from tests.tools.conftest import error_of
from upstream_sim.biodata import RECORDED_PROTO_UUID


def _sim_sets(sim) -> list[dict]:
    return list(sim.state.prototypes.datasets.values())


async def _uuids(run_tool, **args) -> list[str]:
    body = (await run_tool("eco_search_prototype_datasets", {"limit": 200, **args})).ok
    return [i["uuid"] for i in body["items"]]


@pytest.fixture
def datasets(sim):
    return _sim_sets(sim)


async def test_unfiltered_search_lists_every_dataset_with_summaries_matching_upstream(run_tool, datasets):
    body = (await run_tool("eco_search_prototype_datasets")).ok
    assert body["page"]["total"] == len(datasets) == 6
    by_uuid = {d["uuid"]: d for d in datasets}
    rec = next(i for i in body["items"] if i["uuid"] == RECORDED_PROTO_UUID)
    ds = by_uuid[RECORDED_PROTO_UUID]
    assert rec["projectTitle"] == ds["projectTitle"]
    assert rec["startYear"] == ds["startYear"] and rec["endYear"] == ds["endYear"]
    assert rec["isPublished"] is ds["isPublished"] and rec["version"] == "v1"
    assert rec["doi"] == ds["doi"]["url"].split("doi.org/")[1]
    assert rec["dataThemes"] == ds["dataThemes"] and rec["scienceTeams"] == ds["scienceTeams"]
    assert rec["siteCodes"] == ["BLUE"] and rec["fileTypes"] == [t["name"] for t in ds["fileTypes"]]
    assert rec["fileCount"] == len(ds["_files"])
    assert body["nextSteps"][0] == {"tool": "eco_get_prototype_dataset", "arguments": {"uuid": body["items"][0]["uuid"]},
                                    "why": body["nextSteps"][0]["why"]}


async def test_the_list_is_fetched_once_cold_and_searched_locally_when_warm(run_tool, sim):
    cold = await run_tool("eco_search_prototype_datasets", {"theme": "eco"})
    warm = await run_tool("eco_search_prototype_datasets", {"query": "reaeration", "site_code": "BLUE"})
    assert cold.requests == 1
    assert warm.requests == 0 and warm.ok["page"]["total"] >= 1


async def test_query_words_must_all_match_title_abstract_or_keywords(run_tool, datasets):
    # keyword only (site code in lower case), title only, abstract only
    assert await _uuids(run_tool, query="blue reaeration") == [d["uuid"] for d in datasets
                                                              if "(BLUE)" in d["projectTitle"]]
    assert await _uuids(run_tool, query="CONDUCTIVITY") == [d["uuid"] for d in datasets]
    assert await _uuids(run_tool, query="contains prototype") == [d["uuid"] for d in datasets]
    assert await _uuids(run_tool, query="reaeration zzqx") == []


async def test_theme_is_a_case_insensitive_prefix(run_tool, datasets):
    got = await _uuids(run_tool, theme="ECOHYD")
    assert got == [d["uuid"] for d in datasets if "Ecohydrology" in d["dataThemes"]]
    assert 0 < len(got) < len(datasets)
    assert await _uuids(run_tool, theme="hydrology") == []  # a prefix, not a substring


async def test_science_team_matches_a_substring_or_the_abbreviation(run_tool, datasets):
    aos = [d["uuid"] for d in datasets if any("(AOS)" in t for t in d["scienceTeams"])]
    assert await _uuids(run_tool, science_team="aos") == aos
    assert await _uuids(run_tool, science_team="Terrestrial") == [
        d["uuid"] for d in datasets if any("Terrestrial" in t for t in d["scienceTeams"])]
    assert 0 < len(aos) < len(datasets)


async def test_site_code_filters_by_location_and_is_upper_cased(run_tool, datasets):
    assert await _uuids(run_tool, site_code="blue") == [d["uuid"] for d in datasets
                                                        if any(loc["siteCode"] == "BLUE" for loc in d["locations"])]


async def test_years_select_datasets_overlapping_the_window(run_tool, datasets):
    year = datasets[0]["startYear"]
    later = await _uuids(run_tool, start_year=year)
    earlier = await _uuids(run_tool, end_year=year)
    both = await _uuids(run_tool, start_year=year, end_year=year)
    assert later == [d["uuid"] for d in datasets if d["endYear"] >= year]
    assert earlier == [d["uuid"] for d in datasets if d["startYear"] <= year]
    assert both == [d["uuid"] for d in datasets if d["startYear"] <= year <= d["endYear"]]
    assert RECORDED_PROTO_UUID in both
    assert await _uuids(run_tool, start_year=2100) == []


async def test_file_type_is_case_insensitive_and_is_published_is_exact(run_tool, datasets):
    zips = await _uuids(run_tool, file_type="zip")
    assert zips == [d["uuid"] for d in datasets if any(t["name"] == "ZIP" for t in d["fileTypes"])] and zips
    published = await _uuids(run_tool, is_published=True)
    unpublished = await _uuids(run_tool, is_published=False)
    assert published == [d["uuid"] for d in datasets if d["isPublished"]]
    assert sorted(published + unpublished) == sorted(d["uuid"] for d in datasets)


async def test_facets_count_the_filtered_set_in_upstream_spelling(run_tool, datasets):
    body = (await run_tool("eco_search_prototype_datasets", {"science_team": "AOS", "limit": 1})).ok
    matched = [d for d in datasets if any("(AOS)" in t for t in d["scienceTeams"])]
    assert len(body["items"]) == 1 and body["page"]["total"] == len(matched)
    themes: dict[str, int] = {}
    for d in matched:
        for t in d["dataThemes"]:
            themes[t] = themes.get(t, 0) + 1
    assert body["facets"]["themes"] == themes
    assert body["facets"]["scienceTeams"]["Aquatic Observational Systems (AOS)"] == len(matched)
    assert set(body["facets"]) == {"themes", "scienceTeams", "fileTypes"}
    assert "CSV" in body["facets"]["fileTypes"]


async def test_paging_walks_every_match_without_repeats_and_offers_the_next_page(run_tool):
    seen, offset = [], 0
    while offset is not None:
        body = (await run_tool("eco_search_prototype_datasets", {"limit": 4, "offset": offset})).ok
        seen += [i["uuid"] for i in body["items"]]
        if body["page"]["nextOffset"] is not None:
            assert any(s["arguments"].get("offset") == body["page"]["nextOffset"] for s in body["nextSteps"])
        offset = body["page"]["nextOffset"]
    assert len(seen) == len(set(seen)) == 6


@pytest.mark.parametrize(("args", "field"), [
    ({"limit": 201}, "limit"), ({"limit": 0}, "limit"), ({"start_year": 1800}, "start_year"),
    ({"end_year": 2200}, "end_year"), ({"site_code": "BLUEX"}, "site_code"), ({"offset": -1}, "offset"),
    ({"is_published": "yes"}, "is_published"),
])
async def test_bad_inputs_are_invalid_argument_naming_the_field_before_any_request(run_tool, args, field):
    out = await run_tool("eco_search_prototype_datasets", args)
    error_of(out, "invalid_argument", field)
    assert out.requests == 0
