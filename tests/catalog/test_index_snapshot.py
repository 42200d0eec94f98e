"""A built index is kept in the data folder (catalog.index_snapshot) and a new process whose
database holds the same catalogs takes it instead of building; anything that does not match or
cannot be read means a build, never an error."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

import pytest
from django.db.models import F

from catalog import index, index_snapshot
from catalog.models import CatalogState
from eco_core.config import get_config
from families import availability
from families.call import CallContext
from families.products import SearchProductsInput, find_products
from families.sites import SearchSitesInput, find_sites


class NoUpstream:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the read asked the upstream ({name}) although the catalog holds the answer")


@pytest.fixture
def kept(idx, fresh_index, tmp_path, monkeypatch):
    """Snapshots kept in a folder of the test's own (the test database is in memory, which keeps
    none by default); `builds` counts the index builds from here on."""
    monkeypatch.setattr(index_snapshot, "FOLDER", tmp_path)
    builds: list[dict[str, int]] = []
    real = index.build_index

    def counted(versions, info):
        builds.append(dict(versions))
        return real(versions, info)

    monkeypatch.setattr(index, "build_index", counted)
    return builds


def snapshots(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("index-*.pickle"))


def new_process() -> index.CatalogIndex:
    index.reset()
    return index.get_index()


def test_a_build_leaves_a_snapshot_that_the_next_process_takes_without_building(kept, tmp_path, monkeypatch):
    built = new_process()
    assert kept == [built.versions] and len(snapshots(tmp_path)) == 1

    def refuse(versions, info):
        raise AssertionError("built although a snapshot of these catalogs was kept")

    monkeypatch.setattr(index, "build_index", refuse)
    loaded = new_process()
    assert loaded is not built and loaded.versions == built.versions
    assert loaded.info == built.info


def test_an_index_taken_from_a_snapshot_holds_and_answers_the_same_as_the_built_one(kept, idx):
    built = idx
    index_snapshot.save(built)
    loaded = new_process()
    assert kept == [] and loaded is not built
    for part in ("products", "by_code", "sites", "site_by_code", "releases", "domains", "postings", "field_of", "vocab"):
        assert getattr(loaded, part) == getattr(built, part), part
    for query in ("soil temperature", "barometric presure", "mammals", "DP1.10003.001", "carbon dioxde flux"):
        args = SearchProductsInput(query=query)
        assert find_products(loaded, args) == find_products(built, args)
    args = SearchProductsInput(site="HARV", release="RELEASE-2024", available_from="2019-01")
    assert find_products(loaded, args) == find_products(built, args)
    for query in ("harv", "central plains", "Colorado"):
        assert find_sites(loaded, SearchSitesInput(query=query)) == find_sites(built, SearchSitesInput(query=query))


async def test_availability_from_a_snapshot_is_the_availability_of_the_built_index(kept, idx):
    from asgiref.sync import sync_to_async

    built = idx
    await sync_to_async(index_snapshot.save)(built)
    loaded = await sync_to_async(new_process)()
    assert kept == [] and loaded is not built
    upstream: Any = NoUpstream()
    call = CallContext(cfg=get_config(), transport="stdio", protocol_version="2026-07-28", upstream=upstream)
    for args in ({"product": "DP1.00001.001", "format": "months"}, {"product": "DP1.00001.001", "format": "counts"},
                 {"site": "HARV"}, {"product": "DP1.00001.001", "site": "ABBY"}):
        wanted = availability.AvailabilityInput(**args)
        a = await availability.availability_from(loaded, wanted, call)
        b = await availability.availability_from(built, wanted, call)
        assert a == b, args


def test_equal_values_are_still_stored_once_in_an_index_taken_from_a_snapshot(kept, idx):
    def distinct_runs(of: index.CatalogIndex) -> tuple[int, int]:
        runs = [run for p in of.products for c in p.cells.values() for run in c.by_release.values()]
        return len(runs), len({id(run) for run in runs})

    built = idx
    index_snapshot.save(built)
    loaded = new_process()
    assert kept == []
    total, distinct = distinct_runs(loaded)
    assert (total, distinct) == distinct_runs(built) and distinct < total


def test_a_new_catalog_version_is_built_and_replaces_the_old_snapshot(kept, idx, tmp_path):
    index_snapshot.save(idx)
    old = snapshots(tmp_path)
    CatalogState.objects.filter(catalog="releases").update(version=F("version") + 1)
    second = new_process()
    assert kept == [second.versions] and second.versions["releases"] == idx.versions["releases"] + 1
    assert len(snapshots(tmp_path)) == 1 and snapshots(tmp_path) != old
    new_process()
    assert len(kept) == 1  # the new snapshot is taken


def test_catalogs_swapped_in_at_another_time_do_not_take_a_snapshot_of_the_same_versions(kept, idx):
    """A database recreated from scratch counts its versions from 1 again: the swap time tells
    its catalogs from the ones a snapshot was made of."""
    index_snapshot.save(idx)
    state = CatalogState.objects.get(catalog="sites")
    CatalogState.objects.filter(catalog="sites").update(refreshed_at=state.refreshed_at.replace(year=2001))
    assert new_process().versions == idx.versions and len(kept) == 1


@pytest.mark.parametrize("spoil", [
    pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
    pytest.param(lambda b: b"", id="empty"),
    pytest.param(lambda b: b[:100] + bytes(len(b) - 100), id="zeroed"),
    pytest.param(lambda b: pickle.dumps({"format": index_snapshot.FORMAT, "versions": {"products": -1}, "index": {}}),
                 id="of-other-versions"),
    pytest.param(lambda b: pickle.dumps(["not", "a", "snapshot"]), id="something-else"),
    pytest.param(lambda b: b"\x80\x05cnowhere\nMissing\n.", id="of-missing-code"),
])
def test_a_snapshot_that_cannot_be_read_means_a_build_that_replaces_it(kept, idx, tmp_path, spoil):
    index_snapshot.save(idx)
    (path,) = tmp_path.glob("index-*.pickle")
    path.write_bytes(spoil(path.read_bytes()))
    assert new_process().products == idx.products and len(kept) == 1
    new_process()
    assert len(kept) == 1  # the rebuilt index was kept again and is taken


def test_a_folder_that_cannot_be_written_is_no_error(kept, idx, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(index_snapshot, "FOLDER", blocker)
    assert new_process().products == idx.products and len(kept) == 1
    assert blocker.read_text() == "" and snapshots(tmp_path) == []


def test_the_per_process_query_memo_is_not_kept(kept, idx):
    idx.product_tokens_for("temperatur")
    assert idx._token_cache
    index_snapshot.save(idx)
    assert new_process()._token_cache == {} and kept == []


def test_hand_made_catalog_states_keep_no_snapshot(kept, tmp_path):
    """Without a swap time, nothing tells one catalog of these versions from another."""
    CatalogState.objects.filter(catalog="releases").update(refreshed_at=None)
    new_process()
    assert snapshots(tmp_path) == [] and len(kept) == 1


def test_a_private_in_memory_database_keeps_no_snapshot_in_the_data_folder(kept, tmp_path, monkeypatch, settings):
    from django.db import connection

    if "mode=memory" not in str(connection.settings_dict["NAME"]):
        pytest.skip("the test database is not SQLite in memory")
    monkeypatch.setattr(index_snapshot, "FOLDER", None)
    settings.DATA_DIR = tmp_path
    new_process()
    assert not (tmp_path / "cache").exists() and len(kept) == 1


def test_a_snapshot_is_taken_only_for_the_versions_it_holds(kept, idx):
    index_snapshot.save(idx)
    info = {c: replace(i, version=i.version + 1) for c, i in idx.info.items()}
    assert index_snapshot.load({c: i.version for c, i in info.items()}, info, index.CatalogIndex) is None
    assert index_snapshot.load(idx.versions, idx.info, index.CatalogIndex) is not None


def test_what_a_writer_killed_mid_write_left_is_removed_by_the_next_write(kept, idx, tmp_path):
    import os

    name = f".{index_snapshot.PREFIX}0123.pickle.999.tmp"
    (tmp_path / name).write_bytes(b"half")
    os.utime(tmp_path / name, (1, 1))
    (tmp_path / ".index-live.pickle.998.tmp").write_bytes(b"being written")
    index_snapshot.save(idx)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [".index-live.pickle.998.tmp"]
