"""eco_get_product: the catalog record, every opt-in section, release views, errors."""

from __future__ import annotations

import pytest

from catalog.months import to_ranges
from tests.tools.conftest import error_of

SOIL = "DP1.00041.001"
TEXT = {"abstract": ["productAbstract"], "design": ["productDesignDescription"],
        "study": ["productStudyDescription"], "sensor": ["productSensor"], "remarks": ["productRemarks"],
        "packages": ["productBasicDescription", "productExpandedDescription"]}


async def test_empty_include_answers_from_the_catalog_field_by_field_with_no_request(run_tool, sim):
    out = await run_tool("eco_get_product", {"product": SOIL})
    assert out.requests == 0 and out.meta["cacheHits"] == 0
    body = out.ok
    p = sim.world.products[SOIL]
    for key in ("productCode", "productCodeLong", "productCodePresentation", "productName", "productDescription",
                "productStatus", "productCategory", "productScienceTeam", "productScienceTeamAbbr",
                "productPublicationFormatType", "productHasExpanded", "themes", "keywords"):
        assert body[key] == p[key], key
    tags = sim.world.product_releases(SOIL)
    assert [r["release"] for r in body["releases"]] == tags and body["latestRelease"] == tags[-1]
    # DOIs in one form everywhere: doi bare, doiUrl the link.
    link = sim.world.product_doi(SOIL, tags[-1])["url"]
    assert body["releases"][-1]["doiUrl"] == link == body["urls"]["doiUrl"] and link.startswith("https://doi.org/")
    assert body["releases"][-1]["doi"] == link.removeprefix("https://doi.org/") == body["urls"]["doi"]
    avail = sim.world.availability(SOIL)
    assert body["availability"]["siteCount"] == len(avail)
    assert body["availability"]["siteMonths"] == sum(len(m) for m in avail.values())
    assert set(body["availability"]["byRelease"]) == {"PROVISIONAL", "RELEASE-2026"}
    assert body["specsCount"] == len(p["specs"]) and "changeLogCount" not in body
    assert body["urls"]["api"].endswith(f"/products/{SOIL}")
    # The detail record's fields are absent unless asked for (the schema does not require them).
    for key in ("productAbstract", "specs", "changeLogs", "changeLogsPage", "availabilityRows", "availabilityPage",
                "biorepositoryCollections"):
        assert key not in body, key
    assert body["resolved"]["product"]["matchedBy"] == "code"
    assert body["source"]["origin"] == "catalog"


@pytest.mark.parametrize("section", sorted(TEXT))
async def test_each_text_section_comes_from_the_detail_record(run_tool, sim, section):
    body = (await run_tool("eco_get_product", {"product": SOIL, "include": [section]})).ok
    p = sim.world.products[SOIL]
    for key in TEXT[section]:
        assert body[key] == p[key], key
    others = [k for s, keys in TEXT.items() if s != section for k in keys]
    assert not set(others) & set(body)
    assert body["changeLogCount"] == len(p["changeLogs"])
    assert body["source"]["origin"] == "upstream"


async def test_detail_record_is_fetched_once_then_served_from_the_cache(run_tool):
    first = await run_tool("eco_get_product", {"product": "DP1.00002.001", "include": ["abstract"]})
    assert first.meta["requests"] + first.meta["cacheHits"] == 1
    again = await run_tool("eco_get_product", {"product": "DP1.00002.001", "include": ["specs"]})
    assert again.requests == 0 and again.meta["cacheHits"] == 1


async def test_text_is_clipped_to_the_budget_and_named_in_text_truncated(run_tool, sim):
    body = (await run_tool("eco_get_product", {"product": SOIL, "include": ["abstract", "study"],
                                               "text_budget": 100})).ok
    assert len(body["productAbstract"]) <= 100 and body["productAbstract"].endswith("…")
    assert sim.world.products[SOIL]["productAbstract"].startswith(body["productAbstract"][:-1].rstrip())
    assert "productAbstract" in body["textTruncated"]
    assert ("productStudyDescription" in body["textTruncated"]) == (
        len(sim.world.products[SOIL]["productStudyDescription"]) > 100)
    assert any("text_budget" in n for n in body["notes"])


async def test_specs_list_the_documents(run_tool, sim):
    body = (await run_tool("eco_get_product", {"product": SOIL, "include": ["specs"]})).ok
    expected = sim.world.products[SOIL]["specs"]
    assert [s["specNumber"] for s in body["specs"]] == [s["specNumber"] for s in expected]
    assert body["specs"][0]["specSize"] == expected[0]["specSize"]
    assert body["specs"][0]["specUrl"].endswith(f"/documents/{expected[0]['specNumber']}")


async def test_change_logs_are_newest_first_and_page_to_the_end(run_tool, sim):
    code = next(c for c, p in sim.world.products.items() if len(p["changeLogs"]) == 3)
    expected = sorted(sim.world.products[code]["changeLogs"], key=lambda c: c["issueDate"], reverse=True)
    seen, args = [], {"product": code, "include": ["change_logs"], "change_logs_limit": 2}
    while args is not None:  # following the answer's own next step, as an agent does
        body = (await run_tool("eco_get_product", args)).ok
        seen += body["changeLogs"]
        assert len(body["changeLogs"]) <= 2
        step = next((s for s in body["nextSteps"] if s["tool"] == "eco_get_product"
                     and "change_logs_offset" in s["arguments"]), None)
        assert (step is None) == (body["changeLogsPage"]["nextOffset"] is None)
        args = step and step["arguments"]
        if args:
            assert args["change_logs_offset"] == body["changeLogsPage"]["nextOffset"]
            assert args["change_logs_limit"] == 2  # the caller's page size, not the default
    assert [c["id"] for c in seen] == [c["id"] for c in expected]
    assert seen[0]["issue"] == expected[0]["issue"] and body["changeLogsPage"]["total"] == 3


async def test_availability_section_gives_one_row_per_site_with_ranges_per_release(run_tool, sim):
    body = (await run_tool("eco_get_product", {"product": SOIL, "include": ["availability"],
                                               "availability_limit": 300})).ok
    avail = sim.world.availability(SOIL)
    assert [r["siteCode"] for r in body["availabilityRows"]] == sorted(avail)
    row = body["availabilityRows"][0]
    months = avail[row["siteCode"]]
    assert row["ranges"] == to_ranges(months)
    assert row["byRelease"]["RELEASE-2026"] == to_ranges(m for m in months if m <= "2025-06")
    assert body["availabilityPage"]["total"] == len(avail) and body["availabilityPage"]["nextOffset"] is None
    paged = (await run_tool("eco_get_product", {"product": SOIL, "include": ["availability"],
                                                "availability_limit": 5, "availability_offset": 5})).ok
    assert [r["siteCode"] for r in paged["availabilityRows"]] == sorted(avail)[5:10]
    assert paged["availabilityPage"]["nextOffset"] == 10


async def test_all_includes_every_section_and_biorepository_is_a_list(run_tool):
    body = (await run_tool("eco_get_product", {"product": SOIL, "include": ["all"]})).ok
    for key in ("productAbstract", "productDesignDescription", "specs", "changeLogs", "availabilityRows"):
        assert body[key] is not None, key
    assert body["biorepositoryCollections"] == []


async def test_release_reads_the_product_as_published_in_that_release(run_tool, sim):
    body = (await run_tool("eco_get_product", {"product": SOIL, "release": "RELEASE-2023",
                                               "include": ["availability"]})).ok
    assert [r["release"] for r in body["releases"]] == ["RELEASE-2023"]
    assert body["resolved"]["release"]["release"] == "RELEASE-2023"
    assert set(body["availability"]["byRelease"]) == {"RELEASE-2023"}
    assert all(r["lastMonth"] <= "2022-06" for r in body["availabilityRows"])
    assert body["urls"]["api"].endswith("?release=RELEASE-2023")


async def test_code_without_revision_and_exact_name_resolve_and_are_echoed(run_tool):
    by_base = (await run_tool("eco_get_product", {"product": "dp1.00041"})).ok
    assert by_base["productCode"] == SOIL and by_base["resolved"]["product"]["matchedBy"] == "code_without_revision"
    by_name = (await run_tool("eco_get_product", {"product": "soil temperature"})).ok
    assert by_name["productCode"] == SOIL and by_name["resolved"]["product"]["matchedBy"] == "name"


async def test_bad_inputs_give_the_spec_codes_naming_the_field(run_tool):
    cases = [
        ({}, "invalid_argument", "product"),
        ({"product": SOIL, "include": ["everything"]}, "invalid_argument", "include"),
        ({"product": SOIL, "text_budget": 99}, "invalid_argument", "text_budget"),
        ({"product": SOIL, "text_budget": 20001}, "invalid_argument", "text_budget"),
        ({"product": SOIL, "change_logs_limit": 201}, "invalid_argument", "change_logs_limit"),
        ({"product": SOIL, "availability_limit": 0}, "invalid_argument", "availability_limit"),
        ({"product": SOIL, "availability_offset": -1}, "invalid_argument", "availability_offset"),
        ({"product": SOIL, "include": "abstract"}, "invalid_argument", "include"),
        ({"product": SOIL, "sections": ["abstract"]}, "invalid_argument", "sections"),
        ({"product": SOIL, "release": "PROVISIONAL"}, "invalid_argument", "release"),
        ({"product": "DP1.99999.001"}, "not_found", "product"),
        ({"product": "temperature"}, "ambiguous_input", "product"),
        ({"product": SOIL, "release": "RELEASE-1999"}, "not_found", "release"),
    ]
    for args, code, field in cases:
        out = await run_tool("eco_get_product", args)
        error_of(out, code, field)
        assert out.requests == 0, args


async def test_a_future_product_has_an_empty_availability_summary_and_no_rows(run_tool, sim):
    future = next(c for c, p in sim.world.products.items() if p["productStatus"] == "FUTURE")
    body = (await run_tool("eco_get_product", {"product": future})).ok
    assert body["productStatus"] == "FUTURE" and body["releases"] == [] and body["latestRelease"] is None
    assert body["availability"] == {"siteCount": 0, "firstMonth": None, "lastMonth": None, "monthRange": None,
                                    "siteMonths": 0, "byRelease": {}}
    avail = (await run_tool("eco_get_availability", {"product": future})).ok
    assert avail["rows"] == [] and avail["summary"]["rows"] == 0 and avail["page"]["nextOffset"] is None


async def test_a_repeated_catalog_only_call_is_answered_by_the_same_object_and_the_same_result(run_tool, sim_cfg):
    """Catalog-only answers are kept per index and input (the gateway then reuses their dump and
    text); an answer that asked the upstream is never kept."""
    from eco_core.memo import memos
    from eco_core.wire import is_returned_again
    from families import products
    from families.call import CallContext
    from mcp_gateway.arguments import parse_arguments
    from mcp_gateway.registry import default_registry

    spec = default_registry().get("eco_get_product")
    assert spec is not None
    first = await run_tool("eco_get_product", {"product": SOIL})
    again = await run_tool("eco_get_product", {"product": SOIL})
    assert again.ok == first.ok and again.requests == 0

    def call() -> CallContext:
        return CallContext(cfg=sim_cfg, transport="stdio", protocol_version="2026-07-28")

    args = parse_arguments(spec, {"product": SOIL})
    out = await products.get_product(args, call())
    assert out is await products.get_product(args, call()) and is_returned_again(out)
    kept = memos.sizes()["products.catalog_answers"]
    detailed = parse_arguments(spec, {"product": SOIL, "include": ["abstract"]})
    one = await products.get_product(detailed, call())
    assert one is not await products.get_product(detailed, call()) and not is_returned_again(one)
    assert memos.sizes()["products.catalog_answers"] == kept


async def test_another_spelling_of_the_same_product_answers_the_same_catalog_record(run_tool):
    by_code = (await run_tool("eco_get_product", {"product": SOIL})).ok
    by_name = (await run_tool("eco_get_product", {"product": "soil temperature"})).ok
    assert by_name["resolved"]["product"]["matchedBy"] == "name"
    assert {k: v for k, v in by_name.items() if k != "resolved"} == \
        {k: v for k, v in by_code.items() if k != "resolved"}
