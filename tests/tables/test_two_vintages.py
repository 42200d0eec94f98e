"""A field whose package changed between vintages of the variables file is not dropped (issue 40,
item 4). Soil temperature at HARV, 2025-07 and 2025-08 (provisional: each month published on its
own day, so the August variables file is the newest): July was published when `finalQFSciRvw` was
in the basic package (its variables file says so and its basic files carry the column); August's
variables file puts it in the expanded package and its basic files do not carry it. July's files
also carry `soilTempLegacyQF`, a field only July's variables file lists at all.

The stack keeps both, described by the newest variables file that lists each, with July's values
(read again from July's CSV files here) and empty August rows, and says so in a note. Every other
column equals neonutilities' stack_by_table over the same files, value for value (neonutilities
2.0 types each table from the newest variables file alone and so drops the two columns; R
neonUtilities reads each month by its own variables file and keeps their union, as eco does).
A field that only the expanded package ever carried stays out of the basic stack."""

from __future__ import annotations

import csv
import importlib.util
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables import dataset
from tests.tables.neon_support import assert_same_table, neonutilities_stack, write_packages
from upstream_sim import vintages
from upstream_sim.state import files_for

SOIL, SITE, JULY, AUGUST = "DP1.00041.001", "HARV", "2025-07", "2025-08"
MOVED = "finalQFSciRvw"
LEGACY = "soilTempLegacyQF"
LEGACY_ROW = ["ST_30_minute", LEGACY, "Quality flag of an earlier processing, 1=fail, 0=pass", "integer", "NA",
              "basic", "integer", "N", ""]


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _write(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())


def _july_as_published_then(files, sources) -> list[Path]:
    """July's basic ST_30_minute files with MOVED (values of its expanded files) and LEGACY, and its
    variables file with MOVED basic and a row for LEGACY; the paths of the data files."""
    order = [f.name for f in files.table(SOIL, "ST_30_minute").fields]
    expanded = {s.name: s for s in files.package_files(SOIL, SITE, JULY, "expanded", "PROVISIONAL")}
    out = []
    for s in sources:
        if f".{JULY}." not in s.path.parent.name:
            continue
        if ".ST_30_minute." in s.name:
            exp = expanded[s.name.replace(".basic.", ".expanded.")]
            s.path.write_bytes(vintages.earlier_basic(s.path.read_bytes(), files.content(exp), (MOVED,), order))
            rows = _rows(s.path)
            _write(s.path, [[*rows[0], LEGACY], *([*r, str(i % 2)] for i, r in enumerate(rows[1:]))])
            out.append(s.path)
        elif ".variables." in s.name:
            s.path.write_bytes(vintages.variables_with_basic(s.path.read_bytes(), "ST_30_minute", (MOVED,)))
            _write(s.path, [*_rows(s.path), LEGACY_ROW])
    return out


@pytest.fixture(scope="module")
def stacked(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("vintages")
    files = files_for(1)
    folder = root / f"filesToStack{SOIL[4:9]}"
    sources = write_packages(files, SOIL, [SITE], JULY, AUGUST, folder, keep="ST_30_minute")
    assert {s.release for s in sources} == {"PROVISIONAL"}
    july = _july_as_published_then(files, sources)
    out = root / "dataset"
    built = dataset.build(out, dataset.table_sources(sources), root=root, product=SOIL, package="basic", wanted=None,
                          selection={}, citations=[], issue_log=None)
    return root, folder, sources, july, out, built


def test_a_field_an_older_month_carries_in_the_package_is_kept_with_the_newest_description(stacked):
    _, _, sources, july, out, built = stacked
    newest = max((s for s in sources if ".variables." in s.name), key=lambda s: s.name)
    assert f".{AUGUST}." in newest.path.parent.name
    described = {r["fieldName"]: r for r in csv.DictReader(io.StringIO(newest.path.read_text()))
                 if r["table"] == "ST_30_minute"}
    assert described[MOVED]["downloadPkg"] == "expanded" and LEGACY not in described
    table = pq.read_table(out / "ST_30_minute.parquet")
    names = table.schema.names
    assert names.index(MOVED) == names.index("finalQF") + 1  # where the variables file lists it
    field = table.schema.field(MOVED)
    assert field.type == pa.int64()
    assert field.metadata[b"description"].decode() == described[MOVED]["description"]
    assert field.metadata[b"downloadPkg"] == b"expanded"
    legacy = table.schema.field(LEGACY)  # named by July's variables file, the only one that lists it
    assert legacy.type == pa.int64() and legacy.metadata[b"description"].decode() == LEGACY_ROW[2]
    # July's values, read again from July's files; August's rows empty
    expected = {}
    for path in july:
        rows = _rows(path)
        hor, ver = path.name.split(".")[6:8]
        for r in rows[1:]:
            row = dict(zip(rows[0], r, strict=True))
            expected[(hor, ver, row["startDateTime"])] = (int(row[MOVED]), int(row[LEGACY]))
    got = {}
    for r in table.select(["horizontalPosition", "verticalPosition", "startDateTime", MOVED, LEGACY]).to_pylist():
        got[(r["horizontalPosition"], r["verticalPosition"], r["startDateTime"].strftime("%Y-%m-%dT%H:%M:%SZ"))] = (
            r[MOVED], r[LEGACY])
    in_july = {k: v for k, v in got.items() if k[2].startswith(JULY)}
    assert in_july == expected and len(expected) == 2 * 31 * 48
    assert {v for k, v in got.items() if k[2].startswith(AUGUST)} == {(None, None)}
    # an expanded-only field never reaches a basic stack
    assert "rangePassQM" in described and described["rangePassQM"]["downloadPkg"] == "expanded"
    assert "rangePassQM" not in names
    notes = built.record["notes"]
    assert any(MOVED in n and "1 of 2 months (2025-07)" in n and "expanded package" in n for n in notes), notes
    assert any(LEGACY in n for n in notes), notes


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("neonutilities") is None, reason="neonutilities is not installed")
def test_every_other_column_equals_neonutilities_over_the_same_files(stacked):
    root, folder, _, _, out, _ = stacked
    theirs = neonutilities_stack(folder, root / "nu.pickle")["ST_30_minute"]
    mine = pq.read_table(out / "ST_30_minute.parquet").to_pandas()
    assert MOVED not in theirs.columns and LEGACY not in theirs.columns  # neonutilities 2.0 drops them
    assert_same_table(mine.drop(columns=[MOVED, LEGACY]), theirs, "ST_30_minute")


def test_a_stack_fetches_the_newest_variables_file_of_each_content_only():
    from tables.stack import needed

    def var(site: str, gt: str) -> str:
        return f"NEON.D01.{site}.{SOIL}.variables.{gt}.csv"

    names = [var("HARV", "20250824T064757Z"), var("HARV", "20250912T125802Z"), var("CPER", "20250911T013832Z"),
             var("CPER", "20250701T000000Z")]
    md5s = {names[0]: "old", names[1]: "new", names[2]: "new", names[3]: "old"}
    got = {n for n in needed(names, None, md5s) if ".variables." in n}
    assert got == {names[1], names[0]}  # the newest of each content: 2025-09-12 ("new"), 2025-08-24 ("old")
    assert {n for n in needed(names) if ".variables." in n} == {names[1]}  # without MD5s: the newest alone
    assert {n for n in needed(names, None, dict.fromkeys(names)) if ".variables." in n} == {names[1]}
