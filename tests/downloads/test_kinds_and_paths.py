"""File-name grammar and path confinement, without the simulator."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from downloads import paths
from downloads.kinds import classify
from eco_core.errors import EcoError


@pytest.mark.parametrize("name, kind, table, position", [
    ("NEON.D01.HARV.DP1.00041.001.001.501.030.ST_30_minute.2020-01.basic.20200204T120000Z.csv", "data",
     "ST_30_minute", ("001", "501", "030")),
    ("NEON.D01.HARV.DP1.10003.001.brd_countdata.2020-01.basic.20200204T120000Z.csv", "data", "brd_countdata", None),
    ("NEON.D01.HARV.DP1.10003.001.ltr_pertrap.expanded.20200204T120000Z.csv", "data", "ltr_pertrap", None),
    ("NEON.A_and_L_Great_Lakes.lig_externalSummary.20241118T021017Z.csv", "data", "lig_externalSummary", None),
    ("NEON.D03.DSNY.DP4.00200.001.nsae.2017-03.basic.20211220T152138Z.h5", "data", "nsae", None),
    ("NEON.D01.HARV.DP0.10003.001.validation.20200204T120000Z.csv", "validation", None, None),
    ("NEON.D01.HARV.DP0.10003.001.categoricalCodes.20200204T120000Z.csv", "categorical_codes", None, None),
    ("NEON.D01.HARV.DP1.10003.001.EML.20200101-20200131.20200204T120000Z.xml", "eml", None, None),
    ("NEON.D01.HARV.DP1.00041.001.sensor_positions.20200204T120000Z.csv", "sensor_positions", None, None),
    ("NEON.D01.HARV.DP1.00041.001.science_review_flags.20200204T120000Z.csv", "science_review_flags", None, None),
    ("NEON.D01.HARV.DP1.10003.001.variables.20200204T120000Z.csv", "variables", None, None),
    ("NEON.D01.HARV.DP1.10003.001.readme.20200204T120000Z.txt", "readme", None, None),
    ("NEON.D17.TEAK.DP1.10003.001.2018-06.basic.20191107T153235Z.zip", "package", None, None),
    ("NEON.D17.TEAK.DP1.10003.001.2018-06.basic.20191107T153235Z.RELEASE-2024.zip", "package", None, None),
    ("NEON_D01_HARV_DP3_732000_4713000_CHM.tif", "data", None, None),
    ("issueLog_10003.csv", "other", None, None),
])
def test_file_names_are_classified_by_neons_grammar(name, kind, table, position):
    parts = classify(name)
    assert (parts.kind, parts.table) == (kind, table)
    assert ((parts.hor, parts.ver, parts.tmi) if position else None) == position


@pytest.mark.parametrize("value", ["../x", "a/../../x", "/etc", "~/x", "a\\b", "a\x00b"])
def test_a_sub_directory_that_could_leave_the_download_directory_is_denied(value):
    with pytest.raises(EcoError) as exc:
        paths.subdir(value)
    assert exc.value.code == "download_denied" and "dest_subdir" in exc.value.message


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b"])
def test_only_plain_file_names_are_accepted(name):
    with pytest.raises(EcoError) as exc:
        paths.plain_name(name)
    assert exc.value.code == "download_denied"


def test_a_symlink_inside_the_directory_pointing_out_is_denied(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    (root / "ok").mkdir()
    assert paths.confine(root, PurePosixPath("ok/file")) == (root / "ok" / "file").resolve()
    with pytest.raises(EcoError) as exc:
        paths.confine(root, PurePosixPath("link/file"))
    assert exc.value.code == "download_denied"


def test_a_plan_s_confiner_denies_a_file_that_is_a_symlink_out_beside_files_it_allows(tmp_path: Path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "escape.csv").symlink_to(outside / "escape.csv")
    (root / "d" / "inside.csv").symlink_to(root / "d" / "real.csv")
    confine = paths.Confiner(root)
    assert confine(PurePosixPath("d/a.csv")) == (root / "d" / "a.csv").resolve()
    assert confine(PurePosixPath("d/inside.csv")) == (root / "d" / "real.csv").resolve()
    with pytest.raises(EcoError) as exc:
        confine(PurePosixPath("d/escape.csv"))
    assert exc.value.code == "download_denied"
    assert confine(PurePosixPath("d/b.csv")) == (root / "d" / "b.csv").resolve()


def test_host_wildcards_match_subdomains_only():
    allowed = paths.host_matcher(["data.neonscience.org", "*.storage.googleapis.com"])
    assert allowed("data.neonscience.org") and allowed("neon.storage.googleapis.com")
    assert not allowed("storage.googleapis.com.evil.net") and not allowed("evilstorage.googleapis.com")
    assert not allowed("neonscience.org")


def test_a_host_off_the_allow_list_is_denied_with_a_hint_naming_the_setting_to_change():
    with pytest.raises(EcoError) as exc:
        paths.check_url("http://localhost:8766/storage/f.csv", paths.host_matcher(["data.neonscience.org"]))
    assert exc.value.code == "download_denied" and exc.value.details == {"host": "localhost"}
    assert "downloads.allowed_hosts" in exc.value.hint and "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS" in exc.value.hint


def test_progress_goes_to_the_downloads_logger_with_files_bytes_and_rate(monkeypatch, caplog):
    from downloads import transfer

    monkeypatch.setattr(transfer, "PROGRESS_EVERY_S", 0.0)
    progress = transfer.Progress(total_files=3, total_bytes=3000)
    progress.files_done = 1
    with caplog.at_level("INFO", logger="eco.downloads"):
        progress.add(1000)
    [line] = [r.getMessage() for r in caplog.records if r.name == "eco.downloads"]
    assert line.startswith("download progress: 1/3 files, 1000/3000 bytes,") and line.endswith("MB/s")
