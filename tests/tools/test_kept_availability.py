"""eco_get_availability answers read off the index alone are kept per input and index (the
"availability.answers" memo table): a kept answer is exactly what a fresh one is, no caller can
change it for the next, an answer that read the upstream (a pinned release) is never kept, and a
new index starts with none."""

from __future__ import annotations

import pytest

from catalog import index
from eco_core.memo import memos

SOIL = "DP1.00041.001"
CALLS = [
    {"product": SOIL},
    {"product": SOIL, "format": "counts", "limit": 5, "offset": 5},
    {"site": "HARV", "format": "counts"},
    {"product": "Soil temperature", "site": "HARV"},
    {"product": SOIL, "provisional": "exclude", "start_month": "2020-01"},
]


def kept_answers() -> int:
    return memos.sizes()["availability.answers"]


@pytest.fixture(autouse=True)
def nothing_kept():
    memos.drop_all()


@pytest.mark.parametrize("args", CALLS)
async def test_a_repeated_call_answers_exactly_what_a_fresh_call_answers(run_tool, args):
    fresh = (await run_tool("eco_get_availability", args)).ok
    assert kept_answers() == 1
    again = await run_tool("eco_get_availability", args)
    assert again.ok == fresh
    assert kept_answers() == 1 and again.requests == 0


async def test_the_same_input_gets_the_same_answer_object_and_another_input_its_own(run_tool):
    await run_tool("eco_get_availability", {"product": SOIL})
    await run_tool("eco_get_availability", {"product": SOIL})
    await run_tool("eco_get_availability", {"product": SOIL, "limit": 3})
    assert kept_answers() == 2


async def test_changing_a_returned_result_does_not_change_the_next(run_tool):
    first = (await run_tool("eco_get_availability", {"product": SOIL})).ok
    expected = (await run_tool("eco_get_availability", {"product": SOIL})).ok
    first["rows"][0]["byRelease"].clear()
    first["rows"].clear()
    first["summary"]["rows"] = -1
    assert (await run_tool("eco_get_availability", {"product": SOIL})).ok == expected


async def test_an_input_holding_a_list_keeps_no_answer(run_tool):
    args = {"site": "HARV", "product_codes": [SOIL, "DP1.10003.001"]}
    first = (await run_tool("eco_get_availability", args)).ok
    assert [r["productCode"] for r in first["rows"]] == [SOIL, "DP1.10003.001"]
    assert (await run_tool("eco_get_availability", args)).ok == first
    assert kept_answers() == 0


async def test_an_answer_read_from_a_pinned_release_is_not_kept(run_tool):
    out = await run_tool("eco_get_availability", {"product": SOIL, "release": "RELEASE-2026"})
    assert out.ok["release"] == "RELEASE-2026"
    assert kept_answers() == 0


async def test_a_new_index_starts_with_no_kept_answers(run_tool):
    before = (await run_tool("eco_get_availability", {"product": SOIL})).ok
    assert kept_answers() == 1
    index.reset()  # the process forgets its index: the next call reads a new one
    assert kept_answers() == 0
    assert (await run_tool("eco_get_availability", {"product": SOIL})).ok == before
    assert kept_answers() == 1


async def test_the_gateway_keeps_the_dump_of_a_kept_answer_and_of_no_fresh_one(run_tool):
    for _ in range(2):
        await run_tool("eco_search_products", {"query": "soil temperature"})
    assert memos.sizes()["calls.results"] == 0  # a search's answer is new every call: nothing to reuse
    first = await run_tool("eco_get_availability", {"product": SOIL})
    again = await run_tool("eco_get_availability", {"product": SOIL})
    assert memos.sizes()["calls.results"] == 1
    assert again.result.content[0].text is first.result.content[0].text  # dumped and encoded once
