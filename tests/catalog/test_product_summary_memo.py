"""eco_get_product's catalog summary is computed once per product entry of an index (issue 19):
the kept answer is the one a fresh computation gives, and no caller can change it for the next."""

from __future__ import annotations

from catalog import index
from catalog.products import _catalog_summary, _summary


def _fresh(p: index.ProductEntry):
    return _summary({s: dict(c.ranges) for s, c in p.cells.items()})


def test_the_kept_summary_equals_a_fresh_one_for_every_product(idx):
    for p in index.get_index().products:
        assert _catalog_summary(p) == _fresh(p)
        assert _catalog_summary(p) == _fresh(p)  # the second answer comes from the memo


def test_changing_a_returned_summary_does_not_change_the_next(idx):
    p = next(p for p in index.get_index().products if p.cells)
    first = _catalog_summary(p)
    first.site_count = -1
    assert _catalog_summary(p).site_count == _fresh(p).site_count
