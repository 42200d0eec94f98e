"""eco_get_availability: the three modes against the simulator's own availability."""

from __future__ import annotations

import pytest

from catalog.months import count, to_ranges
from tests.tools.conftest import error_of

SOIL = "DP1.00041.001"
CUTOFF = "2025-06"  # the latest release (RELEASE-2026) holds months up to here; newer ones are provisional


def expected_by_release(months: list[str]) -> dict[str, list[str]]:
    out = {"RELEASE-2026": to_ranges(m for m in months if m <= CUTOFF),
           "PROVISIONAL": to_ranges(m for m in months if m > CUTOFF)}
    return {k: v for k, v in sorted(out.items()) if v}


async def test_product_mode_gives_one_row_per_site_matching_the_simulator_with_no_request(run_tool, sim):
    out = await run_tool("eco_get_availability", {"product": SOIL, "limit": 500})
    assert out.requests == 0
    body = out.ok
    avail = sim.world.availability(SOIL)
    assert body["mode"] == "product" and body["format"] == "ranges" and body["provisional"] == "include"
    assert body["productCode"] == SOIL and body["productName"] == "Soil temperature"
    assert [r["siteCode"] for r in body["rows"]] == sorted(avail)
    for row in body["rows"]:
        months = avail[row["siteCode"]]
        assert row["siteName"] == sim.world.sites[row["siteCode"]]["siteName"]
        # The product is named once, at the top; each month is listed once, under its release.
        assert "productCode" not in row and "productName" not in row
        assert "ranges" not in row and "months" not in row
        assert row["monthCount"] == len(months)
        assert (row["firstMonth"], row["lastMonth"]) == (months[0], months[-1])
        assert row["byRelease"] == expected_by_release(months)
        assert row["provisionalMonthCount"] == sum(1 for m in months if m > CUTOFF)
    total = sum(len(m) for m in avail.values())
    assert body["summary"]["siteMonths"] == total and body["summary"]["rows"] == len(avail)
    assert sum(body["summary"]["byRelease"].values()) == total
    assert body["summary"]["byRelease"]["PROVISIONAL"] == sum(1 for m in avail.values() for x in m if x > CUTOFF)
    assert body["window"] is None and body["release"] is None


async def test_site_mode_gives_one_row_per_product_at_the_site(run_tool, sim):
    body = (await run_tool("eco_get_availability", {"site": "HARV", "format": "counts", "limit": 500})).ok
    assert body["mode"] == "site" and body["siteCode"] == "HARV" and body["productCode"] is None
    expected = sorted(sim.world.site_products("HARV"))
    assert [r["productCode"] for r in body["rows"]] == expected
    row = body["rows"][0]
    months = sim.world.availability(row["productCode"])["HARV"]
    assert row["productName"] == sim.world.products[row["productCode"]]["productName"]
    assert row["byRelease"] == {k: count(v) for k, v in expected_by_release(months).items()}
    assert "siteCode" not in row and "siteName" not in row


async def test_cell_mode_defaults_to_months_and_accepts_names(run_tool, sim):
    body = (await run_tool("eco_get_availability", {"product": "Soil temperature", "site": "Harvard Forest & Quabbin Watershed NEON"})).ok
    assert body["mode"] == "cell" and body["format"] == "months"
    assert body["resolved"]["product"]["productCode"] == SOIL and body["resolved"]["site"]["siteCode"] == "HARV"
    months = sim.world.availability(SOIL)["HARV"]
    [row] = body["rows"]
    assert row["byRelease"] == {"PROVISIONAL": [m for m in months if m > CUTOFF],
                                "RELEASE-2026": [m for m in months if m <= CUTOFF]}
    assert not {"productCode", "productName", "siteCode", "siteName"} & set(row)
    assert (row["monthCount"], row["firstMonth"], row["lastMonth"]) == (len(months), months[0], months[-1])
    files = next(s for s in body["nextSteps"] if s["tool"] == "eco_list_files")
    assert files["arguments"] == {"product": SOIL, "site_codes": ["HARV"], "start_month": months[-1],
                                  "end_month": months[-1]}


async def test_window_is_applied_locally_with_a_note(run_tool, sim):
    body = (await run_tool("eco_get_availability", {"product": SOIL, "site": "HARV", "start_month": "2020-03",
                                                     "end_month": "2020-08", "format": "ranges"})).ok
    months = [m for m in sim.world.availability(SOIL)["HARV"] if "2020-03" <= m <= "2020-08"]
    assert body["rows"][0]["byRelease"] == {"RELEASE-2026": to_ranges(months)}
    assert body["rows"][0]["monthCount"] == len(months)
    assert body["window"] == {"startMonth": "2020-03", "endMonth": "2020-08"}
    assert any("window" in n and "locally" in n for n in body["notes"])


@pytest.mark.parametrize("mode", ["exclude", "only"])
async def test_provisional_filter_keeps_or_drops_the_provisional_key(run_tool, mode):
    body = (await run_tool("eco_get_availability", {"product": SOIL, "provisional": mode})).ok
    for row in body["rows"]:
        keys = set(row["byRelease"])
        assert keys == {"PROVISIONAL"} if mode == "only" else "PROVISIONAL" not in keys
    assert body["provisional"] == mode


async def test_release_reads_the_product_as_published_with_one_cached_request(run_tool, sim):
    args = {"product": SOIL, "site_codes": ["HARV", "Bartlett Experimental Forest"], "release": "RELEASE-2023"}
    first = await run_tool("eco_get_availability", args)
    assert first.meta["requests"] + first.meta["cacheHits"] == 1
    body = first.ok
    assert body["release"] == "RELEASE-2023" and body["source"]["origin"] == "upstream"
    assert [r["siteCode"] for r in body["rows"]] == ["BART", "HARV"]
    for row in body["rows"]:
        months = [m for m in sim.world.availability(SOIL)[row["siteCode"]] if m <= "2022-06"]
        assert row["byRelease"] == {"RELEASE-2023": to_ranges(months)}
    again = await run_tool("eco_get_availability", args)
    assert again.requests == 0 and again.ok["rows"] == body["rows"]


async def test_site_codes_and_domain_filter_product_mode(run_tool, sim):
    body = (await run_tool("eco_get_availability", {"product": SOIL, "domain_code": "D01"})).ok
    d01 = {c for c, s in sim.world.sites.items() if s["domainCode"] == "D01"}
    assert {r["siteCode"] for r in body["rows"]} == d01 & set(sim.world.availability(SOIL))


async def test_product_codes_filter_site_mode_and_paging_reaches_the_end(run_tool, sim):
    at_harv = sorted(sim.world.site_products("HARV"))
    body = (await run_tool("eco_get_availability", {"site": "HARV", "productCodes": at_harv[:3]})).ok
    assert [r["productCode"] for r in body["rows"]] == at_harv[:3]
    seen, offset = [], 0
    while offset is not None:
        page = (await run_tool("eco_get_availability", {"site": "HARV", "limit": 50, "offset": offset})).ok
        seen += [r["productCode"] for r in page["rows"]]
        offset = page["page"]["nextOffset"]
    assert seen == at_harv


async def test_bad_inputs_give_the_spec_codes_naming_the_field(run_tool):
    cases = [
        ({}, "invalid_argument", "product"),
        ({"product": SOIL, "release": "RELEASE-2024", "provisional": "only"}, "invalid_argument", "provisional"),
        ({"product": SOIL, "release": "PROVISIONAL"}, "invalid_argument", "release"),
        ({"product": SOIL, "site": "HARV", "site_codes": ["BART"]}, "invalid_argument", "site_codes"),
        ({"site": "HARV", "domain_code": "D01"}, "invalid_argument", "domain_code"),
        ({"product": SOIL, "product_codes": [SOIL]}, "invalid_argument", "product_codes"),
        ({"product": SOIL, "site_codes": ["HARV"] * 82}, "invalid_argument", "site_codes"),
        ({"site": "HARV", "product_codes": [SOIL] * 201}, "invalid_argument", "product_codes"),
        ({"product": SOIL, "start_month": "2021-05", "end_month": "2020-01"}, "invalid_argument", "start_month"),
        ({"product": SOIL, "format": "csv"}, "invalid_argument", "format"),
        ({"product": SOIL, "limit": 501}, "invalid_argument", "limit"),
        ({"product": SOIL, "site_codes": "HARV"}, "invalid_argument", "site_codes"),
        ({"product": SOIL, "months": 3}, "invalid_argument", "months"),
        ({"product": "DP1.99999.001"}, "not_found", "product"),
        ({"product": SOIL, "site_codes": ["ZZZZ"]}, "not_found", "site_codes"),
        ({"product": "temperature"}, "ambiguous_input", "product"),
        ({"product": SOIL, "release": "RELEASE-1999"}, "not_found", "release"),
    ]
    for args, code, field in cases:
        out = await run_tool("eco_get_availability", args)
        error_of(out, code, field)
        assert out.requests == 0, args
