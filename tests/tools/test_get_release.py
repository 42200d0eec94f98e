"""eco_get_release against the simulator: resolution (tag, uuid, latest), sections, paging, the
product and site as published, the request counts, and the bad inputs."""

from __future__ import annotations

import pytest

from tests.tools.conftest import error_of


def _in(sim, tag: str) -> list[str]:
    return sorted(c for c in sim.world.products if tag in sim.world.product_releases(c))


async def test_latest_gives_the_newest_release_with_its_products_and_dois_from_the_catalog(run_tool, sim):
    out = await run_tool("eco_get_release", {"release": "latest", "products_limit": 500})
    body = out.ok
    assert body["release"] == "RELEASE-2026" and body["resolved"]["release"]["matchedBy"] == "latest"
    codes = [p["productCode"] for p in body["dataProducts"]]
    assert codes == _in(sim, "RELEASE-2026") and body["productsPage"]["total"] == len(codes)
    first = body["dataProducts"][0]
    assert "https://doi.org/" + first["doi"] == sim.world.product_doi(first["productCode"], "RELEASE-2026")["url"]
    assert body["sites"] is None and body["artifacts"] is None
    assert out.requests == 0
    assert body["nextSteps"][0] == {"tool": "eco_get_citation", "why": body["nextSteps"][0]["why"],
                                    "arguments": {"product": first["productCode"], "release": "RELEASE-2026"}}


async def test_a_uuid_names_its_release_and_product_query_filters_and_pages(run_tool, sim):
    uid = sim.world.release_by_key["RELEASE-2023"]["uuid"]
    body = (await run_tool("eco_get_release", {"release": uid, "product_query": "temperature",
                                               "products_limit": 2})).ok
    assert body["release"] == "RELEASE-2023" and body["uuid"] == uid
    assert len(body["dataProducts"]) == 2 and body["productsPage"]["nextOffset"] == 2
    assert all("temperature" in p["productName"].lower() for p in body["dataProducts"])
    assert any(s["tool"] == "eco_get_release" and s["arguments"]["products_offset"] == 2 for s in body["nextSteps"])


async def test_sites_come_from_one_codes_only_graphql_query_never_the_release_wide_lists(run_tool, fresh_sim):
    out = await run_tool("eco_get_release", {"release": "RELEASE-2025", "include": ["sites"]})
    body = out.ok
    assert [s["siteCode"] for s in body["sites"]] == sorted(fresh_sim.world.sites)
    assert body["sites"][0]["siteName"] and body["dataProducts"] is None
    assert out.requests == 1
    assert fresh_sim.requests.count(r"^/graphql") == 1
    assert fresh_sim.requests.count(r"/releases/[^/]+/(sites|products)$") == 0


async def test_sites_fall_back_to_the_site_catalog_when_graphql_fails(run_tool, fresh_sim):
    fresh_sim.faults.add(kind="graphql_outage")
    body = (await run_tool("eco_get_release", {"release": "RELEASE-2025", "include": ["sites"]})).ok
    assert [s["siteCode"] for s in body["sites"]] == sorted(
        c for c in fresh_sim.world.sites if any(fresh_sim.world.availability(p).get(c, ["9999"])[0] <= "2024-06"
                                                for p in fresh_sim.world.products))
    assert any("site catalog" in n for n in body["notes"])
    assert fresh_sim.requests.count(r"^/api/v0/") == 0


async def test_all_sections_and_the_product_and_site_as_published(run_tool, sim):
    code = _in(sim, "RELEASE-2024")[0]
    out = await run_tool("eco_get_release", {"release": "release-2024", "include": ["all"], "product_code": code,
                                             "site_code": "HARV", "include_artifact_urls": True})
    body = out.ok
    assert body["artifacts"][0]["url"] and body["sites"] and body["dataProducts"]
    assert body["product"]["productCode"] == code
    assert "https://doi.org/" + body["product"]["doi"] == sim.world.product_doi(code, "RELEASE-2024")["url"]
    assert body["product"]["monthRange"].split("/")[1] <= "2023-06"
    assert body["site"]["siteCode"] == "HARV" and body["site"]["productCount"] > 0
    assert body["nextSteps"][0]["arguments"] == {"product": code, "release": "RELEASE-2024"}


@pytest.mark.parametrize(("args", "code", "field"), [
    ({"release": "RELEASE-1999"}, "not_found", "release"),
    ({"release": "PROVISIONAL"}, "invalid_argument", "release"),
    ({"release": "RELEASE-2025", "include": ["everything"]}, "invalid_argument", "include"),
    ({"release": "RELEASE-2025", "products_limit": 501}, "invalid_argument", "products_limit"),
    ({"release": "RELEASE-2025", "products_offset": -1}, "invalid_argument", "products_offset"),
    ({"release": "RELEASE-2025", "site_code": "ZZZZ"}, "not_found", "site_code"),
    ({"release": "RELEASE-2025", "product_code": "DP1.99999.001"}, "not_found", "product_code"),
    ({}, "invalid_argument", "release"),
])
async def test_bad_inputs_get_their_stable_code_naming_the_field(run_tool, args, code, field):
    error_of(await run_tool("eco_get_release", args), code, field)


async def test_an_unknown_tag_lists_the_valid_releases(run_tool, sim):
    err = (await run_tool("eco_get_release", {"release": "RELEASE-1999"})).error
    assert err["details"]["validReleases"] == sim.world.release_tags


async def test_a_product_not_in_the_release_is_not_found_with_the_releases_that_have_it(run_tool, sim):
    code = next(c for c in sorted(sim.world.products) if sim.world.product_releases(c)[:1] == ["RELEASE-2023"])
    err = error_of(await run_tool("eco_get_release", {"release": "RELEASE-2022", "product_code": code}),
                   "not_found", "product_code")
    assert err["details"]["validReleases"] == sim.world.product_releases(code)
