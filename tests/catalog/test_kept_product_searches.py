"""Product searches are kept per index: a kept search answers exactly what a fresh one does, for
any page, no caller can change it for the next, and the store is bounded and belongs to one
index."""

from __future__ import annotations

import copy

import pytest

from eco_core.memo import memos
from families import products
from families.products import SearchProductsInput, find_products
from tests.catalog.conftest import family_call

SEARCHES = [
    {"query": "soil temperature", "limit": 10},
    {"query": "bird counts"},
    {"query": "canopy nitrogen foliar"},  # no match: suggestions
    {"query": "temperature", "site": "HARV", "release": "latest", "limit": 5, "offset": 5},
    {"theme": "atm", "status": "ALL", "sort": "productName"},
    {"query": "DP1.10003"},
]


def kept() -> int:
    return memos.sizes()["products.searches"]


async def search(cfg, **args) -> products.SearchProductsOutput:
    return await products.search_products(SearchProductsInput(**args), family_call(cfg))


def _answer(out: products.SearchProductsOutput) -> dict:
    return out.model_dump()


@pytest.mark.parametrize("args", SEARCHES)
async def test_a_kept_search_answers_what_a_fresh_search_answers(idx, eco_cfg, args):
    memos.drop_all()
    fresh = _answer(await search(eco_cfg, **args))
    assert kept() == 1
    assert _answer(await search(eco_cfg, **args)) == fresh


async def test_every_page_of_a_search_comes_from_the_one_kept_search(idx, eco_cfg):
    memos.drop_all()
    whole = await search(eco_cfg, query="temperature", limit=100)
    total = whole.page.total
    pages = [await search(eco_cfg, query="temperature", limit=7, offset=o) for o in range(0, total, 7)]
    assert kept() == 1  # limit and offset are not part of a search
    assert [i.product_code for p in pages for i in p.items] == [i.product_code for i in whole.items]
    assert [p.page.next_offset for p in pages][:-1] == list(range(7, total, 7))[:len(pages) - 1]


async def test_changing_a_returned_answer_does_not_change_the_next(idx, eco_cfg):
    args = {"query": "temperature", "site": "HARV"}
    first = await search(eco_cfg, **args)
    expected = _answer(await search(eco_cfg, **args))
    first.facets["themes"].clear()
    first.resolved["site"]["siteCode"] = "XXXX"
    first.items.clear()
    missed = await search(eco_cfg, query="canopy nitrogen foliar")
    assert missed.did_you_mean
    missed.did_you_mean.clear()
    assert _answer(await search(eco_cfg, **args)) == expected
    assert (await search(eco_cfg, query="canopy nitrogen foliar")).did_you_mean


def test_kept_searches_are_bounded_oldest_first(idx, monkeypatch):
    # The bound is the table's; a small one shows which searches it forgets.
    monkeypatch.setattr(products.kept_searches.table, "max_entries", 3)
    memos.drop_all()
    first = {q: find_products(idx, SearchProductsInput(query=q)) for q in ("soil", "air", "bird", "water", "plant")}
    assert kept() == 3
    for q in ("bird", "water", "plant"):
        assert find_products(idx, SearchProductsInput(query=q)) is first[q]
    for q in ("soil", "air"):
        assert find_products(idx, SearchProductsInput(query=q)) is not first[q]


def test_another_index_starts_with_no_kept_searches(idx):
    args = SearchProductsInput(query="soil")
    mine = find_products(idx, args)
    other = copy.copy(idx)
    theirs = find_products(other, args)
    assert theirs is not mine and find_products(idx, args) is mine
    assert [h.code for h in theirs.hits] == [h.code for h in mine.hits]
