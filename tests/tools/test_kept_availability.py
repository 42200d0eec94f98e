"""eco_get_availability answers read off the index alone are kept per input and index (issue
19): a kept answer is exactly what a fresh one is, no caller can change it for the next, and an
answer that read the upstream (a pinned release) is never kept."""

from __future__ import annotations

import pytest

from mcp_gateway.tools import availability

SOIL = "DP1.00041.001"
CALLS = [
    {"product": SOIL},
    {"product": SOIL, "format": "counts", "limit": 5, "offset": 5},
    {"site": "HARV", "format": "counts"},
    {"product": "Soil temperature", "site": "HARV"},
    {"product": SOIL, "provisional": "exclude", "start_month": "2020-01"},
]


@pytest.mark.parametrize("args", CALLS)
async def test_a_repeated_call_answers_exactly_what_a_fresh_call_answers(run_tool, args):
    availability._answers.clear()
    fresh = (await run_tool("eco_get_availability", args)).ok
    assert len(availability._answers) == 1
    again = await run_tool("eco_get_availability", args)
    assert again.ok == fresh
    assert len(availability._answers) == 1 and again.requests == 0


async def test_the_same_input_gets_the_same_answer_object_and_another_input_its_own(run_tool):
    availability._answers.clear()
    await run_tool("eco_get_availability", {"product": SOIL})
    await run_tool("eco_get_availability", {"product": SOIL})
    await run_tool("eco_get_availability", {"product": SOIL, "limit": 3})
    assert len(availability._answers) == 2


async def test_changing_a_returned_result_does_not_change_the_next(run_tool):
    availability._answers.clear()
    first = (await run_tool("eco_get_availability", {"product": SOIL})).ok
    expected = (await run_tool("eco_get_availability", {"product": SOIL})).ok
    first["rows"][0]["byRelease"].clear()
    first["rows"].clear()
    first["summary"]["rows"] = -1
    assert (await run_tool("eco_get_availability", {"product": SOIL})).ok == expected


async def test_an_input_holding_a_list_keeps_no_answer(run_tool):
    availability._answers.clear()
    args = {"site": "HARV", "product_codes": [SOIL, "DP1.10003.001"]}
    first = (await run_tool("eco_get_availability", args)).ok
    assert [r["productCode"] for r in first["rows"]] == [SOIL, "DP1.10003.001"]
    assert (await run_tool("eco_get_availability", args)).ok == first
    assert len(availability._answers) == 0


async def test_an_answer_read_from_a_pinned_release_is_not_kept(run_tool):
    availability._answers.clear()
    out = await run_tool("eco_get_availability", {"product": SOIL, "release": "RELEASE-2026"})
    assert out.ok["release"] == "RELEASE-2026"
    assert len(availability._answers) == 0


async def test_a_new_index_starts_with_no_kept_answers(run_tool, monkeypatch):
    availability._answers.clear()
    await run_tool("eco_get_availability", {"product": SOIL})
    [(idx, *_)] = availability._answers.held()
    rebuilt = type(idx).__new__(type(idx))
    rebuilt.__dict__.update(idx.__dict__)

    async def new_index(cfg):
        return rebuilt

    monkeypatch.setattr(availability, "catalog_index", new_index)
    again = await run_tool("eco_get_availability", {"site": "HARV"})
    assert again.ok["siteCode"] == "HARV"
    assert [entry[0] for entry in availability._answers.held()] == [rebuilt]


async def test_the_gateway_keeps_the_dump_of_a_kept_answer_and_of_no_fresh_one(run_tool):
    from mcp_gateway import calls

    availability._answers.clear()
    calls._kept_results.clear()
    for _ in range(2):
        await run_tool("eco_search_products", {"query": "soil temperature"})
    assert len(calls._kept_results) == 0  # a search's answer is new every call: nothing to reuse
    first = await run_tool("eco_get_availability", {"product": SOIL})
    again = await run_tool("eco_get_availability", {"product": SOIL})
    assert len(calls._kept_results) == 1
    assert again.result.content[0].text is first.result.content[0].text  # dumped and encoded once
