"""What the stacking tests share: the simulator's files written out as neonutilities lays out the
packages it downloads, neonutilities' `stack_by_table` run on them (unmodified, in a fresh
interpreter), and the comparison of its tables with eco's Parquet files, row for row."""

from __future__ import annotations

import csv
import io
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tables.stack import SourceFile

# The differences allowed, and why:
#  - times come back from Parquet in milliseconds (Parquet has no seconds unit); the values are equal;
#  - a science review flag published in several files with the same lastUpdateDateTime: neonutilities
#    keeps the copy its file-system walk met first, eco the one published last, so those rows'
#    publicationDate and release may differ (the flag's own columns are equal).
TIE_COLUMNS = {"science_review_flags": ("publicationDate", "release")}


def write_packages(files: Any, code: str, sites: list[str], m0: str, m1: str, folder: Path,
                   keep: str | None = None, include_provisional: bool = True) -> list[SourceFile]:
    """Every basic package of the selection unpacked into `folder/<ZIP name without .zip>/`, as
    zips_by_product and stack_by_table leave them; `keep`: only data files whose name holds it
    (metadata files always). Returns the files as eco's stacker sees them."""
    w = files.world
    out = []
    for site in sites:
        for ym in w.availability(code).get(site, []):
            if not m0 <= ym <= m1:
                continue
            release = w.release_for_month(code, site, ym, None)
            if release == "PROVISIONAL" and not include_provisional:
                continue
            pkg = folder / files.package_name(code, site, ym, "basic", release)[: -len(".zip")]
            pkg.mkdir(parents=True, exist_ok=True)
            for spec in files.package_files(code, site, ym, "basic", release):
                if keep and spec.kind == "data" and keep not in spec.name:
                    continue
                (pkg / spec.name).write_bytes(files.content(spec))
                out.append(SourceFile(pkg / spec.name, spec.name, None, release))
    return out


def neonutilities_stack(folder: Path, out: Path) -> dict[str, Any]:
    """stack_by_table on the folder in a fresh interpreter (its citation and issue-log requests hit a
    closed local port); the files are kept (save_unzipped_files)."""
    script = textwrap.dedent(f"""
        import pickle
        import neonutilities as nu
        tables = nu.stack_by_table({str(folder)!r}, savepath="envt", save_unzipped_files=True, progress=False)
        with open({str(out)!r}, "wb") as fh:
            pickle.dump(tables, fh)
    """)
    env = dict(os.environ, HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
               NO_PROXY="127.0.0.1,localhost")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600,
                          cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Data types will be inferred" not in done.stderr and "set to string" not in done.stderr, done.stderr[-2000:]
    with open(out, "rb") as fh:
        return pickle.load(fh)


def _normal(df: Any) -> Any:
    """Times to one unit (seconds, UTC) so the comparison is of values, not of dtype spelling."""
    df = df.copy()
    for c in df.columns:
        if str(df[c].dtype).startswith("datetime64"):
            df[c] = df[c].astype("datetime64[s, UTC]")
    return df


def assert_same_table(mine: Any, theirs: Any, table: str) -> None:
    """Same column names in the same order, same number of rows, and the same rows once both are
    sorted on every column, value for value (numbers compared exactly: both parse the same text)."""
    assert list(mine.columns) == list(theirs.columns), (table, list(mine.columns), list(theirs.columns))
    assert len(mine) == len(theirs), (table, len(mine), len(theirs))
    cols = [c for c in mine.columns if c not in TIE_COLUMNS.get(table, ())]
    a, b = _normal(mine)[cols], _normal(theirs)[cols]
    for c in cols:  # the kinds of values agree, not only their text
        ka, kb = str(a[c].dtype), str(b[c].dtype)
        if table != "science_review_flags":  # neonutilities rebuilds that table from rows: object dtypes
            assert ka == kb or {ka, kb} <= {"object", "str"}, (table, c, ka, kb)
    a = a.astype(str).sort_values(cols).reset_index(drop=True)
    b = b.astype(str).sort_values(cols).reset_index(drop=True)
    for c in cols:
        assert a[c].tolist() == b[c].tolist(), (table, c)


def variables_units(body: bytes) -> dict[tuple[str, str], str]:
    return {(r["table"], r["fieldName"]): r["units"] for r in csv.DictReader(io.StringIO(body.decode()))}
