"""What eco_download_files does on disk, and how few system calls and threads it spends there:
each directory is listed once instead of a stat per file, a batch of body chunks reaches the file
whole even when the kernel writes less than asked, and the disk jobs run on a few threads that
take queued jobs themselves.

And the download folder cannot be poisoned: whatever an agent or another local user puts in it
(symlinks at temporary, manifest or .part names, a directory where the manifest goes, files where
directories go and directories where files go, a hard-linked or foreign `.part`), a call never
writes through it, never answers `internal_error`, and refuses a bad `dest_subdir` before any
request, leaving the folder exactly as it was. (Here, not in a module of their own: the catalog
these calls need is built once a module.)"""

# ruff: noqa: F811  (pytest fixtures imported from tests.downloads.conftest are parameters here)
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

import pytest

from downloads import paths, transfer
from downloads.manifest import NAME as MANIFEST
from eco_core.errors import EcoError
from tests.catalog.conftest import catalog_module, fresh_index, mini_client  # noqa: F401  (fixtures)
from tests.downloads.conftest import call_tool, dl_dir, sim_token, snapshot  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of, sim_cfg  # noqa: F401  (fixture)

BIRDS = "DP1.10003.001"
SITE, MONTH = "HARV", "2020-05"
SEL = {"product": BIRDS, "site_codes": [SITE], "start_month": MONTH}


def expected(sim) -> dict[str, bytes]:
    files = sim.state.files
    served = sim.world.release_for_month(BIRDS, SITE, MONTH, None)
    return {s.name: files.content(s) for s in files.package_files(BIRDS, SITE, MONTH, "basic", served)}


def storage_requests(sim) -> list:
    return sim.requests.matching(r"^/storage/")


def test_each_directory_is_listed_once_and_none_below_one_that_is_not_there(tmp_path: Path, monkeypatch):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "old.csv").write_text("x")
    listed: list[str] = []
    scandir = os.scandir

    def counting(path):
        listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(paths.os, "scandir", counting)
    confine = paths.Confiner(root)
    for name in ("old.csv", "new.csv", "other.csv"):
        confine(PurePosixPath("a") / name)
    for rel in ("b/c/d/1.csv", "b/c/d/2.csv", "b/c/e/3.csv"):
        confine(PurePosixPath(rel))
    real = os.path.realpath(root)
    # the root, a, and b (not there: scandir fails once); nothing below b
    assert sorted(listed) == sorted([real, os.path.join(real, "a"), os.path.join(real, "b")])
    assert confine.entry(confine(PurePosixPath("a/old.csv"))) is not None
    assert confine.entry(confine(PurePosixPath("a/new.csv"))) is None
    assert confine.entry(confine(PurePosixPath("b/c/d/1.csv"))) is None


def test_a_listed_symlink_is_still_resolved_and_one_pointing_out_denied(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "escape.csv").symlink_to(outside / "escape.csv")
    (root / "away").symlink_to(outside)
    confine = paths.Confiner(root)
    assert confine(PurePosixPath("d/fine.csv")) == (root / "d" / "fine.csv").resolve()
    for rel in ("d/escape.csv", "away/file.csv"):
        with pytest.raises(EcoError) as exc:
            confine(PurePosixPath(rel))
        assert exc.value.code == "download_denied"


async def test_a_symlink_in_a_part_files_place_is_replaced_not_written_through(call_tool, fresh_sim, dl_dir,
                                                                               tmp_path):
    name, data = next(iter(expected(fresh_sim).items()))
    folder = dl_dir / BIRDS / SITE / MONTH
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"not yours")
    (folder / (name + ".part")).symlink_to(victim)
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "downloaded" and body["files"][0]["verified"]
    assert (folder / name).read_bytes() == data
    assert victim.read_bytes() == b"not yours"
    assert not (folder / (name + ".part")).exists() and not (folder / (name + ".part")).is_symlink()


async def test_chunks_reach_the_file_whole_and_in_order_when_the_kernel_writes_less_than_asked(tmp_path: Path,
                                                                                                monkeypatch):
    writev = os.writev
    calls = []

    def short(fd, buffers):
        calls.append(len(buffers))
        first = bytes(buffers[0])
        return writev(fd, [first[:3]] if len(first) > 3 else [first, *buffers[1:2]])

    monkeypatch.setattr(transfer.os, "writev", short)
    chunks = [b"abcdefgh", b"", b"ij", b"klmnopqrstuvwxyz", b"0123456789"]
    sink = transfer._Sink(tmp_path / "f.part", hashlib.md5(), transfer._Lane(1))
    for chunk in chunks:
        sink.add(chunk)
    await sink.complete(lambda digest: None)
    whole = b"".join(chunks)
    assert (tmp_path / "f.part").read_bytes() == whole
    assert sink.h.hexdigest() == hashlib.md5(whole).hexdigest()
    assert len(calls) > 3


async def test_disk_jobs_run_on_at_most_the_lanes_width_of_threads_and_each_gets_its_own_outcome():
    import asyncio
    import threading
    import time

    lane = transfer._Lane(2)
    lock = threading.Lock()
    busy, most, threads = [0], [0], set()

    def job(n: int) -> int:
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
            threads.add(threading.get_ident())
        time.sleep(0.02)  # long enough for the queue to fill behind it
        with lock:
            busy[0] -= 1
        if n == 3:
            raise ValueError("job 3")
        return n * 10

    got = await asyncio.gather(*(lane.run(lambda n=n: job(n)) for n in range(8)), return_exceptions=True)
    assert [g if not isinstance(g, ValueError) else "error" for g in got] == [0, 10, 20, "error", 40, 50, 60, 70]
    assert most[0] == 2 and len(threads) == 2
    for _ in range(500):  # the threads leave once they find the queue empty
        if lane.running == 0:
            break
        await asyncio.sleep(0.01)
    assert lane.running == 0 and not lane.jobs


async def test_a_transfer_cancelled_while_a_batch_is_written_closes_its_file_after_that_batch(tmp_path: Path,
                                                                                            monkeypatch):
    import asyncio
    import threading

    writev, gate = os.writev, threading.Event()

    def held_back(fd, buffers):
        if bytes(buffers[0]) == b"first":
            gate.wait(10)
        return writev(fd, buffers)

    monkeypatch.setattr(transfer.os, "writev", held_back)
    sink = transfer._Sink(tmp_path / "f.part", hashlib.md5(), transfer._Lane(2))
    sink.add(b"first")
    await sink.spill()
    sink.add(b"second")
    closing = asyncio.ensure_future(sink.close())
    await asyncio.sleep(0.05)  # close() now waits for the first batch
    closing.cancel()  # as a cancelled call would: the rest goes to the lane at once
    await asyncio.sleep(0.05)
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await closing
    assert (tmp_path / "f.part").read_bytes() == b"firstsecond"


def one_file(sim) -> tuple[str, bytes]:
    """The smallest file of the selection (its own name selects it alone)."""
    files = sim.state.files
    served = sim.world.release_for_month(BIRDS, SITE, MONTH, None)
    got = {s.name: files.content(s) for s in files.package_files(BIRDS, SITE, MONTH, "basic", served)}
    return min(got.items(), key=lambda kv: len(kv[1]))


def manifest_files(root: Path) -> dict:
    path = root / MANIFEST
    assert path.is_file() and not path.is_symlink()
    return json.loads(path.read_text())["files"]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the download folder holding a file another user cares about."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_bytes(b"not yours to overwrite")
    return d


async def test_a_symlink_at_the_old_predictable_manifest_temporary_name_is_never_written_through(
        call_tool, fresh_sim, dl_dir, outside):
    name, _ = one_file(fresh_sim)
    planted = dl_dir / f".{MANIFEST}.{os.getpid()}.tmp"
    planted.symlink_to(outside / "victim.txt")
    before = snapshot(outside)
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "downloaded"
    assert snapshot(outside) == before
    assert planted.is_symlink() and os.readlink(planted) == str(outside / "victim.txt")
    assert list(manifest_files(dl_dir)) == [f"{BIRDS}/{SITE}/{MONTH}/{name}"]
    # nothing else at the top: no temporary file left beside the manifest
    assert sorted(p.name for p in dl_dir.iterdir()) == sorted([BIRDS, MANIFEST, planted.name])


async def test_a_manifest_that_is_a_symlink_is_not_read_through_and_its_target_is_untouched(
        call_tool, fresh_sim, dl_dir, outside):
    name, _ = one_file(fresh_sim)
    rel = f"{BIRDS}/{SITE}/{MONTH}/{name}"
    # The link's target claims another MD5 for the file: read through the link, the call would
    # report the file as changed upstream.
    lure = {"version": 1, "files": {rel: {"md5": "0" * 32, "release": "RELEASE-2000"}}}
    (outside / "victim.txt").write_text(json.dumps(lure))
    (dl_dir / MANIFEST).symlink_to(outside / "victim.txt")
    before = snapshot(outside)
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert [f["changedUpstream"] for f in body["files"]] == [False]
    assert snapshot(outside) == before
    assert manifest_files(dl_dir)[rel]["md5"] == body["files"][0]["md5"]  # a regular file of its own now
    assert any(MANIFEST in n and "symlink" in n for n in body["notes"]), body["notes"]


async def test_a_directory_in_the_manifests_place_leaves_downloads_working_and_says_what_to_move(
        call_tool, fresh_sim, dl_dir):
    name, data = one_file(fresh_sim)
    (dl_dir / MANIFEST / "old").mkdir(parents=True)  # as an earlier dest_subdir of that name left it
    (dl_dir / MANIFEST / "old" / "keep.csv").write_text("mine")
    for _ in range(2):  # and again in a new call: nothing left behind makes the next one fail
        body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
        assert body["files"][0]["status"] in ("downloaded", "skipped")
        assert any(MANIFEST in n and "directory" in n for n in body["notes"]), body["notes"]
    assert (dl_dir / BIRDS / SITE / MONTH / name).read_bytes() == data
    assert (dl_dir / MANIFEST / "old" / "keep.csv").read_text() == "mine"
    assert sorted(p.name for p in dl_dir.iterdir()) == sorted([BIRDS, MANIFEST])  # no .tmp left


@pytest.mark.parametrize("dest_subdir", [
    MANIFEST,
    f"{MANIFEST}/inside",
    f".{MANIFEST}.tmp",
    "notes.txt",  # an existing file
    "notes.txt/deeper",
    "a" * 300,  # one component longer than a file name may be
    "ok/" + "b" * 256,
])
async def test_a_dest_subdir_naming_the_manifest_a_file_or_a_too_long_name_is_denied_before_any_request(
        call_tool, fresh_sim, dl_dir, dest_subdir):
    (dl_dir / "notes.txt").write_text("mine")
    (dl_dir / "ok").mkdir()
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", {**SEL, "dest_subdir": dest_subdir}),
                   "download_denied", "dest_subdir")
    assert "dest_subdir" in err["hint"]
    assert snapshot(dl_dir) == before
    assert len(storage_requests(fresh_sim)) == 0 and fresh_sim.requests.count(r"^/api/v0/data") == 0


@pytest.mark.parametrize("in_the_way, kind", [
    ("{product}", "file"),
    ("{product}/{site}/{month}", "file"),
    ("{product}/{site}/{month}/{name}", "directory"),
    ("{product}/{site}/{month}/{name}.part", "directory"),
])
async def test_something_in_the_way_of_a_destination_is_denied_by_name_before_any_transfer(
        call_tool, fresh_sim, dl_dir, in_the_way, kind):
    name, _ = one_file(fresh_sim)
    rel = in_the_way.format(product=BIRDS, site=SITE, month=MONTH, name=name)
    path = dl_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        path.write_text("mine")
    else:
        (path / "inner").mkdir(parents=True)
    before = snapshot(dl_dir)
    err = error_of(await call_tool("eco_download_files", {**SEL, "name_contains": name}), "download_denied")
    assert rel in err["message"] and kind in err["message"], err
    assert rel in err["hint"] or "move" in err["hint"].lower(), err
    assert snapshot(dl_dir) == before
    assert len(storage_requests(fresh_sim)) == 0


@pytest.mark.parametrize("args, field", [
    ({"spec_number": ".."}, "spec_number"),
    ({"spec_number": "."}, "spec_number"),
    ({"spec_number": "NEON/../x"}, "spec_number"),
    ({"prototype_uuid": ".."}, "prototype_uuid"),
    ({"prototype_uuid": "x", "file_names": ["a.csv", ".."]}, "file_names"),
])
async def test_a_dot_segment_in_an_identifier_that_names_a_download_path_is_invalid_before_any_request(
        call_tool, fresh_sim, dl_dir, args, field):
    before = snapshot(dl_dir)
    error_of(await call_tool("eco_download_files", args, token=None), "invalid_argument", field)
    assert snapshot(dl_dir) == before
    assert fresh_sim.requests.count(r"^/api/v0/(documents|prototype)") == 0


async def test_a_hard_linked_part_file_is_not_resumed_through_the_link_but_fetched_afresh(
        call_tool, fresh_sim, dl_dir, outside):
    name, data = one_file(fresh_sim)
    folder = dl_dir / BIRDS / SITE / MONTH
    folder.mkdir(parents=True)
    other = outside / "other-link.bin"
    other.write_bytes(data[: len(data) // 2])  # a true prefix: resuming it would look valid
    os.link(other, folder / (name + ".part"))
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "downloaded" and body["files"][0]["verified"]
    assert other.read_bytes() == data[: len(data) // 2] and os.stat(other).st_nlink == 1
    assert (folder / name).read_bytes() == data and not (folder / (name + ".part")).exists()
    [req] = storage_requests(fresh_sim)
    assert "range" not in req.headers


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
async def test_a_part_file_owned_by_another_user_is_discarded_not_resumed(call_tool, fresh_sim, dl_dir):
    name, data = one_file(fresh_sim)
    folder = dl_dir / BIRDS / SITE / MONTH
    folder.mkdir(parents=True)
    part = folder / (name + ".part")
    part.write_bytes(data[:10])
    os.chown(part, 65534, 65534)
    body = (await call_tool("eco_download_files", {**SEL, "name_contains": name})).ok
    assert body["files"][0]["status"] == "downloaded"
    assert (folder / name).read_bytes() == data and (folder / name).stat().st_uid == os.geteuid()
    [req] = storage_requests(fresh_sim)
    assert "range" not in req.headers
