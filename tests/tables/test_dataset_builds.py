"""A dataset folder is rebuilt only where its sources changed, never holds a half-written table
under a final name, and survives a build cut off half-way: the next build keeps what was finished
and removes what was not."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables import dataset, variables
from tables.stack import SourceFile
from tests.tables.neon_support import write_packages
from upstream_sim.state import files_for

LITTER = "DP1.10033.001"


@pytest.fixture
def litter(tmp_path):
    files = files_for(1)
    sources = write_packages(files, LITTER, ["HARV"], "2023-06", "2023-07", tmp_path / "src")
    return files, dataset.table_sources(sources)


def _build(folder: Path, sources: list[SourceFile], root: Path) -> dataset.Built:
    return dataset.build(folder, sources, root=root, product=LITTER, package="basic", wanted=None, selection={},
                         citations=[], issue_log=None)


def _mtimes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.parquet")}


def test_an_unchanged_selection_rebuilds_nothing_and_a_changed_file_rebuilds_only_its_table(tmp_path, litter):
    files, sources = litter
    out = tmp_path / "ds"
    first = _build(out, sources, tmp_path)
    assert "ltr_massdata" in first.rebuilt and not first.kept
    assert dataset.is_current(dataset.load(out), out, sources)
    before = _mtimes(out)
    again = _build(out, sources, tmp_path)
    assert again.rebuilt == [] and sorted(again.kept) == sorted(first.rebuilt)
    assert _mtimes(out) == before

    # NEON re-publishes one month's massdata file under the same name with other values
    [old] = [s for s in sources if ".ltr_massdata." in s.name][:1]
    spec = next(s for s in files.package_files(LITTER, "HARV", old.parsed.month, "basic", old.release)
                if s.name == old.name)
    try:
        files.change(spec.name)
        old.path.write_bytes(files.content(spec))
    finally:
        files.revisions.pop(spec.name, None)
        files._meta.pop(spec.name, None)  # the simulator's own cache of sizes and MD5s
        files.bytes_cache.drop(spec.name)
    changed = [SourceFile(s.path, s.name, "changed" if s.name == old.name else s.md5, s.release) for s in sources]
    assert not dataset.is_current(dataset.load(out), out, changed)
    third = _build(out, changed, tmp_path)
    assert third.rebuilt == ["ltr_massdata"]
    after = _mtimes(out)
    assert {n for n in after if after[n] != before[n]} == {"ltr_massdata.parquet"}
    assert dataset.is_current(dataset.load(out), out, changed)


def test_a_build_that_fails_mid_table_leaves_no_file_under_the_tables_name(tmp_path, litter, monkeypatch):
    _, sources = litter
    out = tmp_path / "ds"
    real = pq.ParquetWriter.write_table

    def failing(self, table, *args, **kwargs):
        if table.schema.metadata and table.schema.metadata.get(b"eco.table") == b"ltr_massdata":
            raise OSError("disk full")
        return real(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    with pytest.raises(OSError):
        _build(out, sources, tmp_path)
    assert not (out / "ltr_massdata.parquet").exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert not (out / dataset.DATASET_JSON).exists()


def test_after_an_interrupted_build_finished_tables_are_kept_and_leftovers_removed(tmp_path, litter):
    _, sources = litter
    out = tmp_path / "ds"
    _build(out, sources, tmp_path)
    # A build killed after some tables were renamed into place, before dataset.json was written,
    # while another table was half-written under its temporary name.
    (out / dataset.DATASET_JSON).unlink()
    (out / "ltr_fielddata.parquet").unlink()
    (out / ".ltr_fielddata.parquet.0123456789ab.tmp").write_bytes(b"PAR1 half a table")
    again = _build(out, sources, tmp_path)
    assert again.rebuilt == ["ltr_fielddata"]
    assert "ltr_massdata" in again.kept
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert dataset.is_current(dataset.load(out), out, sources)


def test_a_value_that_does_not_parse_as_its_type_keeps_that_column_as_text(tmp_path, litter):
    _, sources = litter
    src = next(s for s in sources if ".ltr_massdata." in s.name)
    rows = list(csv.reader(io.StringIO(src.path.read_text())))
    rows[1][rows[0].index("dryMass")] = "not weighed"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    src.path.write_text(buf.getvalue())
    out = tmp_path / "ds"
    built = _build(out, sources, tmp_path)
    rec = built.record["tables"]["ltr_massdata"]
    assert any("dryMass" in n for n in rec["notes"])
    table = pq.read_table(out / "ltr_massdata.parquet")
    assert table.schema.field("dryMass").type == pa.string()
    assert "not weighed" in table.column("dryMass").to_pylist()
    assert table.schema.field("collectDate").type == pa.timestamp("ms", tz="UTC")  # the others stay typed


def test_a_file_that_is_not_a_variables_file_is_refused():
    with pytest.raises(ValueError, match="not a NEON variables file"):
        variables.parse(b"name,value\nx,1\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        variables.parse(b"\xff\xfe\x00table")


def test_dataset_ids_name_the_selection_and_change_with_it():
    a = dataset.dataset_id(LITTER, ["HARV", "BART"], "2023-01", "2023-06", "basic", None, True, None)
    assert a == dataset.dataset_id(LITTER, ["BART", "HARV"], "2023-01", "2023-06", "basic", None, True, None)
    assert a.startswith(f"{LITTER}.basic.2023-01.2023-06.")
    assert a != dataset.dataset_id(LITTER, ["HARV"], "2023-01", "2023-06", "basic", None, True, None)
    assert a != dataset.dataset_id(LITTER, ["HARV", "BART"], "2023-01", "2023-06", "basic", None, True, ["ltr_pertrap"])
    assert os.sep not in a


def test_stacking_never_loads_pandas(tmp_path, litter):
    # pandas is a second of start-up and tens of MB that the engine never needs; pyarrow loads it
    # behind the scenes when Python objects are converted, so the engine builds from buffers.
    _, sources = litter
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from tables import dataset
        from tables.stack import SourceFile
        sources = [SourceFile(Path(p), Path(p).name, None, r) for p, r in {[(str(s.path), s.release) for s in sources]!r}]
        dataset.build(Path({str(tmp_path / "ds")!r}), sources, root=Path({str(tmp_path)!r}), product="X",
                      package="basic", wanted=None, selection={{}}, citations=[], issue_log=None)
        print("pandas" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"
    assert (tmp_path / "ds" / "ltr_massdata.parquet").exists()


@pytest.mark.parametrize(("chosen", "backend"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_stacking_allocates_from_the_system_allocator_unless_the_operator_chose_one(tmp_path, litter, chosen,
                                                                                   backend):
    # mimalloc, pyarrow's default, sets up memory in every thread that allocates; the Parquet
    # writer allocates from Arrow's default whatever pool it is handed, so the choice is made
    # before pyarrow is first imported.
    _, sources = litter
    script = textwrap.dedent(f"""
        from pathlib import Path
        from tables import dataset
        from tables.stack import SourceFile
        import pyarrow as pa
        sources = [SourceFile(Path(p), Path(p).name, None, r) for p, r in {[(str(s.path), s.release) for s in sources]!r}]
        dataset.build(Path({str(tmp_path / "ds")!r}), sources, root=Path({str(tmp_path)!r}), product="X",
                      package="basic", wanted=None, selection={{}}, citations=[], issue_log=None)
        used = {{name: getattr(pa, name + "_memory_pool")().max_memory() > 0 for name in ("system", "mimalloc")}}
        print(pa.default_memory_pool().backend_name, sorted(name for name, yes in used.items() if yes))
    """)
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    if chosen:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"{backend} {[backend]!r}"
