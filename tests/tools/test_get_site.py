"""eco_get_site: the catalog record with products, every section, release views, errors."""

from __future__ import annotations

from catalog.months import to_ranges
from tests.tools.conftest import error_of


async def test_default_gives_the_site_and_its_products_from_its_record_read_once_then_from_cache(run_tool, sim):
    out = await run_tool("eco_get_site", {"site": "harv", "products_limit": 20})
    assert out.meta["requests"] + out.meta["cacheHits"] == 1
    assert (await run_tool("eco_get_site", {"site": "harv", "products_limit": 20})).requests == 0
    body = out.ok
    s = sim.world.sites["HARV"]
    for key in ("siteCode", "siteName", "siteType", "siteLatitude", "siteLongitude", "stateCode", "stateName",
                "domainCode", "domainName", "deimsId"):
        assert body[key] == s[key], key
    expected = sorted(sim.world.site_products("HARV"))
    assert body["productCount"] == len(expected)
    assert [p["productCode"] for p in body["dataProducts"]] == expected[:20]
    first = body["dataProducts"][0]
    months = sim.world.availability(first["productCode"])["HARV"]
    assert first["productName"] == sim.world.products[first["productCode"]]["productName"]
    assert first["ranges"] == to_ranges(months) and first["monthCount"] == len(months)
    assert first["provisionalMonthCount"] == sum(1 for m in months if m > "2025-06")
    assert first["byRelease"].get("RELEASE-2026", []) == to_ranges(m for m in months if m <= "2025-06")
    assert body["latestRelease"] == "RELEASE-2026"
    assert body["releases"] is None and body["location"] is None and body["siteDescription"] is None
    assert body["resolved"]["site"] == {"input": "harv", "siteCode": "HARV", "siteName": s["siteName"],
                                        "matchedBy": "code"}
    assert body["nextSteps"][0] == {"tool": "eco_get_availability", "arguments": {"site": "HARV"},
                                    "why": body["nextSteps"][0]["why"]}


async def test_products_query_filters_by_code_or_title_and_pages_to_the_end(run_tool, sim):
    body = (await run_tool("eco_get_site", {"site": "HARV", "products_query": "temperature"})).ok
    assert body["dataProducts"] and all("temperature" in p["productName"].lower() for p in body["dataProducts"])
    by_code = (await run_tool("eco_get_site", {"site": "HARV", "productsQuery": "DP1.00041"})).ok
    assert [p["productCode"] for p in by_code["dataProducts"]] == ["DP1.00041.001"]
    seen, offset = [], 0
    while offset is not None:
        page = (await run_tool("eco_get_site", {"site": "HARV", "products_limit": 25, "products_offset": offset})).ok
        seen += [p["productCode"] for p in page["dataProducts"]]
        offset = page["dataProductsPage"]["nextOffset"]
    assert seen == sorted(sim.world.site_products("HARV"))


async def test_a_page_above_the_byte_budget_is_trimmed_and_says_where_to_continue(run_tool, sim):
    body = (await run_tool("eco_get_site", {"site": "HARV", "products_limit": 300})).ok
    page = body["dataProductsPage"]
    kept = len(body["dataProducts"])
    assert page["truncated"] is True and page["nextOffset"] == kept < len(sim.world.site_products("HARV"))
    rest = (await run_tool("eco_get_site", {"site": "HARV", "products_offset": kept, "products_limit": 5})).ok
    assert rest["dataProducts"][0]["productCode"] == sorted(sim.world.site_products("HARV"))[kept]


async def test_releases_and_description_sections(run_tool, sim):
    body = (await run_tool("eco_get_site", {"site": "HARV", "include": ["releases", "description"]})).ok
    assert body["siteDescription"] == sim.world.sites["HARV"]["siteDescription"]
    assert [r["release"] for r in body["releases"]] == sorted(
        r["release"] for r in sim.world.releases if r["cutoff"] >= min(
            m[0] for c in sim.world.site_products("HARV") for m in [sim.world.availability(c)["HARV"]]))
    assert body["releases"][0]["generationDate"]
    assert body["dataProducts"] is None


async def test_location_section_reads_the_location_record_once_then_from_cache(run_tool, sim):
    first = await run_tool("eco_get_site", {"site": "BART", "include": ["location"]})
    assert first.meta["requests"] + first.meta["cacheHits"] == 2  # the site record, then the location record
    loc = first.ok["location"]
    s = sim.world.sites["BART"]
    assert loc["locationName"] == "BART" and loc["elevation"] == s["_elevation"]
    east, north, zone, hemi = s["_utm"]
    assert (loc["utmEasting"], loc["utmNorthing"], loc["utmZone"], loc["utmHemisphere"]) == (east, north, zone, hemi)
    assert isinstance(loc["properties"], dict) and loc["activePeriods"]
    again = await run_tool("eco_get_site", {"site": "BART", "include": ["location"]})
    assert again.requests == 0 and again.ok["location"] == loc


async def test_all_gives_every_section(run_tool):
    body = (await run_tool("eco_get_site", {"site": "Bartlett Experimental Forest", "include": ["all"]})).ok
    assert body["siteCode"] == "BART" and body["resolved"]["site"]["matchedBy"] == "name"
    for key in ("dataProducts", "releases", "location", "siteDescription"):
        assert body[key] is not None, key


async def test_release_reads_the_site_as_published_in_that_release(run_tool, sim):
    first = await run_tool("eco_get_site", {"site": "HARV", "release": "RELEASE-2022", "products_limit": 40})
    assert first.meta["requests"] + first.meta["cacheHits"] == 1
    body = first.ok
    assert body["resolved"]["release"]["release"] == "RELEASE-2022"
    assert body["urls"]["api"].endswith("/sites/HARV?release=RELEASE-2022")
    for p in body["dataProducts"]:
        assert set(p["byRelease"]) == {"RELEASE-2022"} and p["lastMonth"] <= "2021-06"
        assert p["provisionalMonthCount"] == 0
    expected = [c for c in sorted(sim.world.site_products("HARV")) if sim.world.months_for(c, "HARV", "RELEASE-2022")]
    assert [p["productCode"] for p in body["dataProducts"]] == expected[:40]
    assert body["dataProductsPage"]["total"] == len(expected)


async def test_bad_inputs_give_the_spec_codes_naming_the_field(run_tool):
    cases = [
        ({}, "invalid_argument", "site"),
        ({"site": "HARV", "include": ["weather"]}, "invalid_argument", "include"),
        ({"site": "HARV", "products_limit": 301}, "invalid_argument", "products_limit"),
        ({"site": "HARV", "products_offset": -2}, "invalid_argument", "products_offset"),
        ({"site": "HARV", "products_limit": "ten"}, "invalid_argument", "products_limit"),
        ({"site": "HARV", "product": "DP1.00041.001"}, "invalid_argument", "product"),
        ({"site": "HARV", "release": "PROVISIONAL"}, "invalid_argument", "release"),
        ({"site": "ZZZZ"}, "not_found", "site"),
        ({"site": "Creek"}, "ambiguous_input", "site"),
        ({"site": "HARV", "release": "RELEASE-1999"}, "not_found", "release"),
    ]
    for args, code, field in cases:
        out = await run_tool("eco_get_site", args)
        error_of(out, code, field)
        assert out.requests == 0, args
