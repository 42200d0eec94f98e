"""eco_get_product's catalog summary and catalog record are computed once per product entry of an
index: the kept answer is the one a fresh computation gives, and no caller can change
it for the next."""

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


def test_the_kept_catalog_record_equals_a_fresh_one_for_every_product(idx):
    from catalog import products

    for p in index.get_index().products:
        products._records.pop(id(p), None)
        fresh = products._catalog_record(p, "https://a/api/v0")
        assert products._catalog_record(p, "https://a/api/v0") == fresh  # from the memo
        assert fresh.urls.api == f"https://a/api/v0/products/{p.code}"


def test_a_kept_catalog_record_is_for_one_rest_base_only(idx):
    from catalog import products

    p = index.get_index().products[0]
    assert products._catalog_record(p, "https://a/api/v0").urls.api.startswith("https://a/")
    assert products._catalog_record(p, "https://b/api/v0").urls.api.startswith("https://b/")


def test_changing_a_returned_catalog_record_does_not_change_the_next(idx):
    from catalog import products

    p = index.get_index().products[0]
    first = products._catalog_record(p, "https://a/api/v0")
    first.product_name = "changed"
    assert products._catalog_record(p, "https://a/api/v0").product_name == p.name
