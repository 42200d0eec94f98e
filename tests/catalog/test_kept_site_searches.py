"""Site searches are kept per index: a kept search answers exactly what a fresh one
does, for any page, no caller can change it for the next, a summary with elevations never
becomes the plain one, and the store is bounded and belongs to one index."""

from __future__ import annotations

import copy

import pytest

from catalog import sites
from catalog.sites import search_sites

SEARCHES = [
    {"query": "forest"},
    {"query": "Harvard"},
    {"query": "harvrd forst"},  # typos
    {"query": "zzqx"},  # no match: suggestions
    {"domain_code": "D01", "limit": 1, "offset": 1},
    {"latitude": 42.5, "longitude": -72.2, "radius_km": 800},
    {"product": "DP1.10003.001", "release": "latest", "query": "forest"},
    {"query": "the of"},  # stop words only: every site
]


def _answer(r) -> dict:
    return {"items": [(h.site.code, h.score, h.matched_on, h.distance_km, h.summary().model_dump()) for h in r.items],
            "total": r.total, "page": r.page.model_dump(), "facets": r.facets, "didYouMean": r.did_you_mean,
            "resolved": r.resolved}


@pytest.mark.parametrize("args", SEARCHES)
def test_a_kept_search_answers_what_a_fresh_search_answers(idx, args):
    sites._kept(idx).clear()
    fresh = _answer(search_sites(index=idx, **args))
    assert len(sites._kept(idx)) == 1
    assert _answer(search_sites(index=idx, **args)) == fresh


def test_every_page_of_a_search_comes_from_the_one_kept_search(idx):
    sites._kept(idx).clear()
    whole = search_sites(limit=100, index=idx)
    pages = [search_sites(limit=10, offset=o, index=idx) for o in range(0, whole.total, 10)]
    assert len(sites._kept(idx)) == 1  # limit and offset are not part of a search
    assert [h.site.code for p in pages for h in p.items] == [h.site.code for h in whole.items]


def test_changing_a_returned_answer_does_not_change_the_next(idx):
    args = {"query": "forest", "product": "DP1.10003.001"}
    first = search_sites(index=idx, **args)
    expected = _answer(search_sites(index=idx, **args))
    first.facets["domains"].clear()
    first.resolved["product"]["productCode"] = "XXXX"
    first.items.clear()
    missed = search_sites(query="zzqx", index=idx)
    assert missed.did_you_mean is not None
    missed.did_you_mean.append("XXXX")
    assert _answer(search_sites(index=idx, **args)) == expected
    assert "XXXX" not in search_sites(query="zzqx", index=idx).did_you_mean


def test_a_summary_with_elevation_never_becomes_the_plain_summary(idx):
    hit = search_sites(query="Harvard", index=idx).items[0]
    plain = hit.summary()
    placed = hit.summary((350.0, 732000.0, 4713000.0, 18, "N"))
    assert placed.elevation == 350.0 and placed.utm is not None
    assert hit.summary() is plain and plain.elevation is None and plain.utm is None


def test_kept_searches_are_bounded_oldest_first(idx, monkeypatch):
    monkeypatch.setattr(sites, "KEPT_SEARCHES", 3)
    sites._kept(idx).clear()
    for q in ("forest", "river", "lake", "prairie", "desert"):
        search_sites(query=q, index=idx)
    assert [key[0] for key in sites._kept(idx)] == ["lake", "prairie", "desert"]


def test_another_index_starts_with_no_kept_searches(idx):
    search_sites(query="forest", index=idx)
    other = copy.copy(idx)
    assert sites._kept(other) == {}
    assert [h.site.code for h in search_sites(query="forest", index=other).items] == \
        [h.site.code for h in search_sites(query="forest", index=idx).items]
