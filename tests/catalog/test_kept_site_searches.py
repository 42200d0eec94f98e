"""Site searches are kept per index: a kept search answers exactly what a fresh one does, for any
page, no caller can change it for the next, an item with elevations never becomes the plain one,
and the store is bounded and belongs to one index."""

from __future__ import annotations

import copy

import pytest

from eco_core.memo import memos
from families import sites
from families.sites import SearchSitesInput, find_sites
from tests.catalog.conftest import family_call

SEARCHES = [
    {"query": "forest"},
    {"query": "Harvard"},
    {"query": "harvrd forst"},  # typos
    {"query": "zzqx"},  # no match: suggestions
    {"domain_code": "D01", "limit": 1, "offset": 1},
    {"latitude": 42.5, "longitude": -72.2, "radius_km": 800.0},
    {"product": "DP1.10003.001", "release": "latest", "query": "forest"},
    {"query": "the of"},  # stop words only: every site
]


def kept() -> int:
    return memos.sizes()["sites.searches"]


async def search(cfg, **args) -> sites.SearchSitesOutput:
    return await sites.search_sites(SearchSitesInput(**args), family_call(cfg))


@pytest.mark.parametrize("args", SEARCHES)
async def test_a_kept_search_answers_what_a_fresh_search_answers(idx, eco_cfg, args):
    memos.drop_all()
    fresh = (await search(eco_cfg, **args)).model_dump()
    assert kept() == 1
    assert (await search(eco_cfg, **args)).model_dump() == fresh


async def test_every_page_of_a_search_comes_from_the_one_kept_search(idx, eco_cfg):
    memos.drop_all()
    whole = await search(eco_cfg, limit=100)
    pages = [await search(eco_cfg, limit=10, offset=o) for o in range(0, whole.page.total, 10)]
    assert kept() == 1  # limit and offset are not part of a search
    assert [i.site_code for p in pages for i in p.items] == [i.site_code for i in whole.items]


async def test_changing_a_returned_answer_does_not_change_the_next(idx, eco_cfg):
    args = {"query": "forest", "product": "DP1.10003.001"}
    first = await search(eco_cfg, **args)
    expected = (await search(eco_cfg, **args)).model_dump()
    first.facets["domains"].clear()
    first.resolved["product"]["productCode"] = "XXXX"
    first.items.clear()
    missed = await search(eco_cfg, query="zzqx")
    assert missed.did_you_mean is not None
    missed.did_you_mean.append("XXXX")
    assert (await search(eco_cfg, **args)).model_dump() == expected
    assert "XXXX" not in (await search(eco_cfg, query="zzqx")).did_you_mean


def test_an_item_with_elevation_never_becomes_the_plain_item(idx):
    hit = find_sites(idx, SearchSitesInput(query="Harvard")).hits[0]
    plain = hit.summary()
    placed = hit.summary((350.0, 732000.0, 4713000.0, 18, "N"))
    assert placed.elevation == 350.0 and placed.utm is not None
    assert hit.summary() is plain and plain.elevation is None and plain.utm is None


def test_kept_searches_are_bounded_oldest_first(idx, monkeypatch):
    # The bound is the table's; a small one shows which searches it forgets.
    monkeypatch.setattr(sites.kept_searches.table, "max_entries", 3)
    memos.drop_all()
    first = {q: find_sites(idx, SearchSitesInput(query=q)) for q in ("forest", "river", "lake", "prairie", "desert")}
    assert kept() == 3
    for q in ("lake", "prairie", "desert"):
        assert find_sites(idx, SearchSitesInput(query=q)) is first[q]
    for q in ("forest", "river"):
        assert find_sites(idx, SearchSitesInput(query=q)) is not first[q]


def test_another_index_starts_with_no_kept_searches(idx):
    args = SearchSitesInput(query="forest")
    mine = find_sites(idx, args)
    other = copy.copy(idx)
    theirs = find_sites(other, args)
    assert theirs is not mine and find_sites(idx, args) is mine
    assert [h.site.code for h in theirs.hits] == [h.site.code for h in mine.hits]
