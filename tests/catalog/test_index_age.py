"""A search's index age (CatalogIndex.age_of) is the figure the index gives for that catalog."""

from __future__ import annotations


def test_a_catalogs_age_is_the_one_the_index_gives(idx):
    for catalog in idx.info:
        theirs = idx.age_seconds[catalog]
        ours = idx.age_of(catalog)  # read just after: the same second or the next
        assert theirs is not None and ours in (theirs, theirs + 1), catalog


def test_a_catalog_the_index_lacks_has_no_age(idx):
    assert idx.age_of("no-such-catalog") is None
