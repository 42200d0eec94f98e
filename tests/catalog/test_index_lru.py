"""`cache.max_index_entries` bounds the search indexes a process holds: one per set of catalog
versions, least recently used forgotten first, so a reader pinned to the versions it started on
keeps reading that catalog across a swap until its index is forgotten."""

from __future__ import annotations

import pytest
from django.db.models import F

from catalog import index
from catalog.models import CatalogState, ReleaseRow
from eco_core.config import load_config


@pytest.fixture
def holding(db, fresh_index, active_config):
    """Install a configuration holding `n` indexes. The catalog is two release rows (what an index
    holds does not matter here, only the versions it was built from), so each build is quick."""
    for tag in ("RELEASE-2021", "RELEASE-2022"):
        ReleaseRow.objects.get_or_create(tag=tag)
    CatalogState.objects.get_or_create(catalog="releases")

    def install(n: int) -> None:
        active_config(load_config(flags={"cache.max_index_entries": n}, env={}, warn=False))

    return install


def _swap() -> index.CatalogIndex:
    """What a refresh leaves behind (a higher releases version), then the index of it."""
    CatalogState.objects.filter(catalog="releases").update(version=F("version") + 1)
    index.mark_dirty()
    return index.get_index()


def test_with_one_entry_only_the_current_index_is_held(holding):
    holding(1)
    first = index.get_index()
    second = _swap()
    assert second is not first
    assert index.held_versions() == [second.versions]
    assert index.index_at(first.versions) is None


def test_with_two_entries_the_least_recently_used_is_forgotten_and_a_pinned_reader_keeps_its_catalog(holding):
    holding(2)
    first = index.get_index()
    ReleaseRow.objects.filter(tag="RELEASE-2021").delete()
    second = _swap()
    assert index.held_versions() == [first.versions, second.versions]
    # A reader pinned to the versions it started on reads that catalog after the swap.
    pinned = index.index_at(first.versions)
    assert pinned is first and "RELEASE-2021" in [r.tag for r in pinned.releases]
    assert "RELEASE-2021" not in [r.tag for r in second.releases]
    # `first` was used last, so the next swap forgets `second`, not the oldest.
    third = _swap()
    assert index.held_versions() == [first.versions, third.versions]
    assert index.index_at(second.versions) is None
    # Versions that come back (a database put back to its earlier state) are served from the
    # held index, without a rebuild.
    CatalogState.objects.filter(catalog="releases").update(version=first.versions["releases"])
    index.mark_dirty()
    assert index.get_index() is first
    assert index.held_versions() == [third.versions, first.versions]
