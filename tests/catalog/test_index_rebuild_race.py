"""While this process builds the index of new catalog versions, nobody is handed the superseded
one: a burst of calls right after a swap (or after start-up) used to read the old index, find
its catalogs missing and start a rebuild each (load benchmark: 18 rebuilds, calls of 100-250 s)."""

from __future__ import annotations

import pytest
from django.db.models import F

from catalog import index
from catalog.models import CatalogState, ReleaseRow


@pytest.fixture
def releases(db, fresh_index):
    for tag in ("RELEASE-2021", "RELEASE-2022"):
        ReleaseRow.objects.get_or_create(tag=tag)
    CatalogState.objects.get_or_create(catalog="releases")


def _peek_during_build(monkeypatch: pytest.MonkeyPatch, now: list[float]) -> list[object]:
    """Record what peek_index() answers from inside the next build_index()."""
    seen: list[object] = []
    real = index.build_index

    def build(*args, **kwargs):
        seen.append(index.peek_index(clock=lambda: now[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(index, "build_index", build)
    return seen


def test_after_a_swap_the_old_index_is_not_served_while_the_new_one_is_built(releases, monkeypatch):
    now = [100.0]
    old = index.get_index(clock=lambda: now[0])
    CatalogState.objects.filter(catalog="releases").update(version=F("version") + 1)
    index.mark_dirty()
    seen = _peek_during_build(monkeypatch, now)
    new = index.get_index(clock=lambda: now[0])
    assert seen == [None]  # a caller meanwhile waits for get_index instead of taking `old`
    assert new is not old and index.peek_index(clock=lambda: now[0]) is new


def test_when_the_periodic_check_finds_new_versions_the_old_index_is_not_served_during_the_build(releases,
                                                                                                 monkeypatch):
    now = [100.0]
    old = index.get_index(clock=lambda: now[0])
    # Another process swapped: no mark_dirty here, the once-a-second check finds it.
    CatalogState.objects.filter(catalog="releases").update(version=F("version") + 1)
    now[0] += index.CHECK_INTERVAL_S + 0.1
    seen = _peek_during_build(monkeypatch, now)
    new = index.get_index(clock=lambda: now[0])
    assert seen == [None]
    assert new is not old and index.peek_index(clock=lambda: now[0]) is new


def test_a_swap_marked_during_a_build_keeps_the_next_call_checking(releases, monkeypatch):
    now = [100.0]
    index.get_index(clock=lambda: now[0])
    index.mark_dirty()
    real = index.build_index

    def build(*args, **kwargs):
        index.mark_dirty()  # this process swapped again while the index was being built
        return real(*args, **kwargs)

    CatalogState.objects.filter(catalog="releases").update(version=F("version") + 1)
    monkeypatch.setattr(index, "build_index", build)
    index.get_index(clock=lambda: now[0])
    assert index.peek_index(clock=lambda: now[0]) is None
