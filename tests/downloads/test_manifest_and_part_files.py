"""The manifest and `.part` files on their own (no simulator): what stands at their names and is
not what the service wrote is never read, written or extended through; temporary names cannot be
guessed; a `dest_subdir` is measured against the file system's own limit on a name."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

import pytest

from downloads import manifest, paths, transfer
from eco_core.errors import EcoError

ENTRY = {"a/b.csv": {"md5": "1" * 32, "release": "RELEASE-2026"}}


def test_a_fifo_at_the_manifests_name_is_neither_waited_on_nor_read_and_is_replaced(tmp_path: Path):
    os.mkfifo(tmp_path / manifest.NAME)
    assert manifest.load(tmp_path) == {}  # returns at once: no writer is waited for
    note = manifest.update(tmp_path, ENTRY)
    assert note and "not a regular file" in note
    assert manifest.load(tmp_path) == ENTRY and (tmp_path / manifest.NAME).is_file()


def test_the_manifests_temporary_names_cannot_be_guessed_and_none_is_left(tmp_path: Path, monkeypatch):
    used: list[str] = []
    replace = os.replace

    def recording(src, dst):
        used.append(os.path.basename(src))
        return replace(src, dst)

    monkeypatch.setattr(manifest.os, "replace", recording)
    manifest.update(tmp_path, ENTRY)
    manifest.update(tmp_path, {"c.csv": {"md5": "2" * 32}})
    assert len(set(used)) == 2 and not any(str(os.getpid()) in n for n in used)
    assert all(n.startswith(f".{manifest.NAME}.") and len(n) > len(manifest.NAME) + 16 for n in used)
    assert sorted(p.name for p in tmp_path.iterdir()) == [manifest.NAME]
    assert set(json.loads((tmp_path / manifest.NAME).read_text())["files"]) == {"a/b.csv", "c.csv"}


def test_a_manifest_that_cannot_be_written_is_a_note_not_a_failure(tmp_path: Path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(manifest.os, "replace", full)
    note = manifest.update(tmp_path, ENTRY)
    assert note and "No space left" in note
    assert list(tmp_path.iterdir()) == []  # the temporary file went too


def test_a_part_file_is_continued_only_when_it_is_the_services_own_single_link_file(tmp_path: Path):
    part = tmp_path / "f.csv.part"
    part.write_bytes(b"prefix")
    h = hashlib.md5()
    fd = transfer._reopen_part(part, 6, h)
    os.close(fd)
    assert h.hexdigest() == hashlib.md5(b"prefix").hexdigest()
    with pytest.raises(transfer._PartChanged):  # not the size that was listed: swapped since
        transfer._reopen_part(part, 5, hashlib.md5())
    os.link(part, tmp_path / "other")
    with pytest.raises(transfer._PartChanged):  # a second link would be written through
        transfer._reopen_part(part, 6, hashlib.md5())
    os.unlink(part)
    part.symlink_to(tmp_path / "other")
    with pytest.raises(transfer._PartChanged):  # never followed
        transfer._reopen_part(part, 6, hashlib.md5())


def test_a_new_part_file_is_a_new_file_even_where_a_hard_link_stood(tmp_path: Path):
    other = tmp_path / "other"
    other.write_bytes(b"someone else's")
    os.link(other, tmp_path / "f.csv.part")
    fd = transfer._create_part(tmp_path / "f.csv.part", "f.csv")
    os.write(fd, b"new")
    os.close(fd)
    assert other.read_bytes() == b"someone else's" and (tmp_path / "f.csv.part").read_bytes() == b"new"


def test_a_directory_where_a_part_file_must_be_created_is_download_denied_by_name(tmp_path: Path):
    (tmp_path / "f.csv.part").mkdir()
    with pytest.raises(EcoError) as exc:
        transfer._create_part(tmp_path / "f.csv.part", "x/f.csv")
    assert exc.value.code == "download_denied" and "x/f.csv.part" in exc.value.message


def test_dest_subdir_names_are_held_to_the_file_systems_own_limit(tmp_path: Path):
    name_max, path_max = paths.limits(tmp_path / "not" / "there" / "yet")
    assert (name_max, path_max) == (os.pathconf(tmp_path, "PC_NAME_MAX"), os.pathconf(tmp_path, "PC_PATH_MAX"))
    assert paths.subdir("a" * name_max, name_max=name_max) == PurePosixPath("a" * name_max)
    with pytest.raises(EcoError) as exc:
        paths.subdir("ok/" + "é" * (name_max // 2 + 1), name_max=name_max)  # counted in bytes, not characters
    assert exc.value.code == "download_denied" and exc.value.details["nameMax"] == name_max


@pytest.mark.parametrize("value", [manifest.NAME, manifest.NAME.upper(), f"{manifest.NAME}/x",
                                   f".{manifest.NAME}.0123.tmp"])
def test_a_dest_subdir_may_not_take_the_manifests_name(value):
    with pytest.raises(EcoError) as exc:
        paths.subdir(value)
    assert exc.value.code == "download_denied" and "dest_subdir" in exc.value.message
    assert paths.subdir(f"runs/{manifest.NAME}") == PurePosixPath(f"runs/{manifest.NAME}")  # only at the top
