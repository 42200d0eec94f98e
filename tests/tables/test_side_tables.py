"""Side tables that used to take a dataset down (issue 40 item 3), at the engine's level: a
2017-2018 sensor_positions file with a variables file that does not describe sensor_positions (as
the variables files of those years did not: the table was read by its first file's header, and
the positioned view named columns it did not have), and a sensor_positions Parquet file damaged
after stacking (and its variables file gone). Every other table answers either way; the broken
relations are left out."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eco_core.errors import EcoError
from eco_core.memo import memos
from tables import dataset, query
from tables.variables import SENSOR_POSITIONS_FIELDS
from tests.tables.neon_support import write_packages
from upstream_sim import vintages
from upstream_sim.state import files_for

SOIL, SITE, MONTH = "DP1.00041.001", "HARV", "2024-08"
LIMITS = query.Limits(timeout_s=20, memory_mb=256, threads=1)


def run(folder: Path, sql: str) -> query.Result:
    return query.QueryRun(folder, sql, 1000, LIMITS).start().result(timeout=60)


def _stack(root: Path, *, oldest_form: bool) -> tuple[Path, list]:
    sources = write_packages(files_for(1), SOIL, [SITE], MONTH, MONTH, root / "src", keep="ST_30_minute")
    if oldest_form:
        for s in sources:
            if ".sensor_positions." in s.name:
                s.path.write_bytes(vintages.sensor_positions_as(s.path.read_bytes(), "2017-2018"))
            elif ".variables." in s.name:
                rows = list(csv.reader(io.StringIO(s.path.read_text())))
                buf = io.StringIO()
                csv.writer(buf, lineterminator="\n").writerows(r for r in rows if r[0] != "sensor_positions")
                s.path.write_text(buf.getvalue())
    folder = root / "datasets" / ("old" if oldest_form else "new")
    dataset.build(folder, dataset.table_sources(sources), root=root, product=SOIL, package="basic", wanted=None,
                  selection={}, citations=[], issue_log=None)
    return folder, sources


@pytest.fixture(autouse=True)
def _no_kept_engines():
    yield
    memos.drop_all()


def test_the_oldest_form_without_the_variables_files_word_reads_to_the_current_columns(tmp_path):
    folder, sources = _stack(tmp_path, oldest_form=True)
    [src] = [s for s in sources if ".sensor_positions." in s.name]
    published = list(csv.DictReader(io.StringIO(src.path.read_text())))
    table = pq.read_table(folder / "sensor_positions.parquet")
    assert table.schema.names == ["domainID", "siteID", *(f.name for f in SENSOR_POSITIONS_FIELDS), "publicationDate",
                                  "release"]
    assert table.schema.field("zOffset").type == pa.float64()
    assert table.schema.field("positionStartDateTime").type == pa.timestamp("ms", tz="UTC")
    assert table.schema.field("locationReferenceElevation").metadata[b"units"] == b"meter"
    got = sorted(table.select(["HOR.VER", "zOffset", "locationReferenceElevation", "positionStartDateTime"]
                              ).to_pylist(), key=lambda r: r["HOR.VER"])
    assert [(r["HOR.VER"], r["zOffset"], r["locationReferenceElevation"], r["positionStartDateTime"]) for r in got] == [
        (p["HOR.VER"], float(p["zOffset"]), float(p["referenceElevation"]), None)
        for p in sorted(published, key=lambda p: p["HOR.VER"])]
    n = pq.read_metadata(folder / "ST_30_minute.parquet").num_rows
    assert run(folder, "SELECT count(*) FROM ST_30_minute").rows == [[n]]
    placed = run(folder, "SELECT count(*), count(zOffset), count(DISTINCT zOffset), min(heightRank), "
                         "max(heightRank) FROM ST_30_minute_positioned").rows
    assert placed == [[n, n, 2, 1, 2]]  # one period per position: every row once, at its position's height


def test_a_damaged_positions_file_leaves_the_data_tables_answering(tmp_path):
    folder, _ = _stack(tmp_path, oldest_form=False)
    path = folder / "sensor_positions.parquet"
    path.write_bytes(b"\0" * path.stat().st_size)  # damaged in place, dataset.json unchanged
    (folder / "variables.csv").unlink()  # and the variables file gone
    n = pq.read_metadata(folder / "ST_30_minute.parquet").num_rows
    assert run(folder, "SELECT count(*) AS n FROM ST_30_minute").rows == [[n]]
    for name in ("ST_30_minute_positioned", "sensor_positions", "variables"):
        with pytest.raises(EcoError) as got:
            run(folder, f"SELECT * FROM {name}")
        assert got.value.code == "not_found" and "ST_30_minute" in got.value.message


def test_one_sites_unreadable_positions_file_leaves_the_other_sites_positioned(tmp_path):
    sources = write_packages(files_for(1), SOIL, [SITE, "CPER"], MONTH, MONTH, tmp_path / "src", keep="ST_30_minute")
    [broken] = [s for s in sources if ".sensor_positions." in s.name and ".CPER." in s.name]
    broken.path.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")  # not text at all
    folder = tmp_path / "datasets" / "two"
    built = dataset.build(folder, dataset.table_sources(sources), root=tmp_path, product=SOIL, package="basic",
                          wanted=None, selection={}, citations=[], issue_log=None)
    assert any(broken.name in n and "left out 1 of its 2 files" in n for n in built.record["notes"]), built.record
    assert set(pq.read_table(folder / "sensor_positions.parquet").column("siteID").to_pylist()) == {SITE}
    got = run(folder, "SELECT siteID, count(*), count(zOffset) FROM ST_30_minute_positioned GROUP BY 1 ORDER BY 1")
    n: dict[str, int] = {}
    for site in ("CPER", SITE):
        n[site] = run(folder, f"SELECT count(*) FROM ST_30_minute WHERE siteID = '{site}'").rows[0][0]
    assert got.rows == [["CPER", n["CPER"], 0], [SITE, n[SITE], n[SITE]]] and n["CPER"] > 0
