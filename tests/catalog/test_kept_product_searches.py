"""Product searches are kept per index: a kept search answers exactly what a fresh one
does, for any page, no caller can change it for the next, and the store is bounded and belongs to
one index."""

from __future__ import annotations

import copy

import pytest

from catalog import products
from catalog.products import search_products

SEARCHES = [
    {"query": "soil temperature", "limit": 10},
    {"query": "bird counts"},
    {"query": "canopy nitrogen foliar"},  # no match: suggestions
    {"query": "temperature", "site": "HARV", "release": "latest", "limit": 5, "offset": 5},
    {"theme": "atm", "status": "ALL", "sort": "productName"},
    {"query": "DP1.10003"},
]


def _answer(r) -> dict:
    return {"items": [(h.code, h.score, h.matched_on, h.summary(500).model_dump()) for h in r.items],
            "total": r.total, "page": r.page.model_dump(), "facets": r.facets, "didYouMean": r.did_you_mean,
            "resolved": r.resolved}


@pytest.mark.parametrize("args", SEARCHES)
def test_a_kept_search_answers_what_a_fresh_search_answers(idx, args):
    products._kept(idx).clear()
    fresh = _answer(search_products(index=idx, **args))
    assert len(products._kept(idx)) == 1
    assert _answer(search_products(index=idx, **args)) == fresh


def test_every_page_of_a_search_comes_from_the_one_kept_search(idx):
    products._kept(idx).clear()
    whole = search_products(query="temperature", limit=100, index=idx)
    pages = [search_products(query="temperature", limit=7, offset=o, index=idx) for o in range(0, whole.total, 7)]
    assert len(products._kept(idx)) == 1  # limit and offset are not part of a search
    assert [h.code for p in pages for h in p.items] == [h.code for h in whole.items]
    assert [p.page.next_offset for p in pages][:-1] == list(range(7, whole.total, 7))[:len(pages) - 1]


def test_changing_a_returned_answer_does_not_change_the_next(idx):
    args = {"query": "temperature", "site": "HARV"}
    first = search_products(index=idx, **args)
    expected = _answer(search_products(index=idx, **args))
    first.facets["themes"].clear()
    first.resolved["site"]["siteCode"] = "XXXX"
    first.items.clear()
    missed = search_products(query="canopy nitrogen foliar", index=idx)
    assert missed.did_you_mean
    missed.did_you_mean.clear()
    assert _answer(search_products(index=idx, **args)) == expected
    assert search_products(query="canopy nitrogen foliar", index=idx).did_you_mean


def test_kept_searches_are_bounded_oldest_first(idx, monkeypatch):
    monkeypatch.setattr(products, "KEPT_SEARCHES", 3)
    products._kept(idx).clear()
    for q in ("soil", "air", "bird", "water", "plant"):
        search_products(query=q, index=idx)
    kept = products._kept(idx)
    assert [key[0] for key in kept] == ["bird", "water", "plant"]


def test_another_index_starts_with_no_kept_searches(idx):
    search_products(query="soil", index=idx)
    other = copy.copy(idx)
    assert products._kept(other) == {}
    assert [h.code for h in search_products(query="soil", index=other).items] == \
        [h.code for h in search_products(query="soil", index=idx).items]
