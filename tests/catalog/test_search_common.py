"""The searches' index age is the index's own figure for that catalog."""

from __future__ import annotations

from catalog.search_common import age_seconds


def test_a_catalogs_age_is_the_one_the_index_gives(idx):
    for catalog in idx.info:
        theirs = idx.age_seconds[catalog]
        ours = age_seconds(idx, catalog)  # read just after: the same second or the next
        assert theirs is not None and ours in (theirs, theirs + 1), catalog


def test_a_catalog_the_index_lacks_has_no_age(idx):
    assert age_seconds(idx, "no-such-catalog") is None
