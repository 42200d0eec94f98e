"""A new index, built or taken from a snapshot, is moved out of the cyclic collector's reach once,
where it is installed (catalog.index), and a superseded one is still freed."""

from __future__ import annotations

import gc
import weakref

import pytest

from catalog import index, index_snapshot


@pytest.fixture
def freezes(kept_nowhere, monkeypatch: pytest.MonkeyPatch):
    calls: list[int] = []
    real = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (calls.append(1), real())[1])
    yield calls
    gc.unfreeze()


@pytest.fixture
def kept_nowhere(fresh_index, tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(index_snapshot, "FOLDER", tmp_path)


def tracked(obj: object) -> bool:
    return any(o is obj for o in gc.get_objects())


def test_a_built_index_is_frozen_once_and_served_again_without_another_freeze(idx, freezes):
    index.reset()
    built = index.get_index()
    assert freezes == [1]
    assert not tracked(built.products)  # full collections skip it
    index.mark_dirty()  # a version check, same catalogs: the held index, not a new one
    assert index.get_index() is built
    assert freezes == [1]


def test_an_index_taken_from_a_snapshot_is_frozen_once(idx, freezes):
    index_snapshot.save(idx)
    index.reset()
    loaded = index.get_index()
    assert loaded is not idx and freezes == [1]
    assert not tracked(loaded.products) and not tracked(loaded.by_code)


def test_the_collector_is_back_on_after_a_snapshot_load_whatever_the_snapshot(idx, freezes, tmp_path):
    index_snapshot.save(idx)
    for path in tmp_path.glob("index-*.pickle"):
        path.write_bytes(b"not a pickle")
    index.reset()
    assert index.get_index().versions == idx.versions  # built instead
    assert gc.isenabled()


def test_a_frozen_index_that_is_superseded_is_still_freed(idx, freezes, monkeypatch):
    index.reset()
    gone = weakref.ref(index.get_index())
    index.reset()
    monkeypatch.setattr(index_snapshot, "load", lambda *a: None)  # a build, not the snapshot
    assert index.get_index() is not None
    assert gone() is None  # no cycle holds it: reference counting frees it, frozen or not
