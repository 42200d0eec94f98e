"""A stacked dataset on disk: one folder per selection inside the download directory, holding one
Parquet file per table, the product's metadata files beside them, and `dataset.json`.

    dataset_id(...) -> str                      the same selection always names the same folder
    load(folder) -> dict | None                 its dataset.json
    is_current(record, folder, sources) -> bool made from exactly these sources, all still on disk
    build(folder, sources, ...) -> Built        stack what changed, keep the rest, record it all

dataset.json holds the selection, every source file (name, MD5, release, size, path), each
table's rows, columns (name, type, units), time span and the fingerprint of what it was made
from, the citations of the releases used, and the metadata files. A table whose fingerprint is
unchanged is kept as it is; a table whose Parquet file is complete but not yet recorded (a run
stopped before writing dataset.json) is recognised by the fingerprint in its own footer. Every
file is written under a temporary name and renamed, dataset.json last; a folder lock keeps two
builds of one dataset apart, and temporary files left by a killed build are removed by the next.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tables import layout
from tables.layout import DATASET_ID_PATTERN, DATASET_JSON, FOLDER  # noqa: F401  (re-exported)
from tables.stack import (
    TMP_SUFFIX,
    SourceFile,
    TablePlan,
    TableResult,
    Unreadable,
    build_table,
    distinct_variables,
    plan_tables,
    result_of,
    tmp_name,
)
from tables.variables import FieldDef, parse

log = logging.getLogger("eco.tables")

VERSION = 1
LOCK = ".lock"
# Small tables stacked at once.
SIDE_BY_SIDE = 4
# Metadata files kept beside the tables: the newest of each kind, under a plain name.
SIDE_FILES = {"variables": "variables.csv", "validation": "validation.csv", "categorical_codes": "categoricalCodes.csv",
              "readme": "readme.txt"}
ISSUE_LOG = "issue_log.csv"
READMES = layout.READMES
ISSUE_LOG_COLUMNS = ("id", "parentIssueID", "issueDate", "resolvedDate", "dateRangeStart", "dateRangeEnd",
                     "locationAffected", "issue", "resolution")


class NoVariables(Exception):
    """The selection has no variables file: its tables cannot be typed."""


def dataset_id(product: str, sites: list[str], start: str, end: str, package: str, release: str | None,
               include_provisional: bool, tables: list[str] | None) -> str:
    """A readable, stable folder name: product, package and months, then a digest of the rest."""
    rest = json.dumps([sorted(sites), release, include_provisional, sorted(tables) if tables else None])
    digest = hashlib.sha256(rest.encode()).hexdigest()[:10]
    return f"{product}.{package}.{start}.{end}.{digest}"


def load(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / DATASET_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == VERSION else None


def _source_key(s: SourceFile) -> tuple[str, str | None, str]:
    return s.name, s.md5, s.release


def is_current(record: dict[str, Any] | None, folder: Path, sources: list[SourceFile]) -> bool:
    """True when the record was made from exactly these sources (names, MD5s, releases), each is
    still on disk at its size, and every file the record names is in the folder at its size."""
    if record is None:
        return False
    recorded = record.get("sources") or []
    if sorted((s["name"], s.get("md5"), s["release"]) for s in recorded) != sorted(map(_source_key, sources)):
        return False
    sizes = {s["name"]: s.get("size") for s in recorded}
    for s in sources:
        try:
            if s.path.stat().st_size != sizes.get(s.name):
                return False
        except OSError:
            return False
    for t in (record.get("tables") or {}).values():
        if not _has(folder / t["file"], t.get("bytes")):
            return False
    return all(_has(folder / f["file"], f.get("bytes")) for f in (record.get("files") or {}).values())


def _has(path: Path, size: int | None) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:
        return False


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Holds the dataset's folder lock (waits for another build of the same dataset)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                 0o644)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover  (no flock: one process builds at a time anyway)
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _clear_leftovers(folder: Path) -> int:
    """Temporary files a build killed mid-write left behind (only ours: '.<name>.<hex>.tmp')."""
    n = 0
    for p in folder.iterdir():
        if p.name.startswith(".") and p.name.endswith(TMP_SUFFIX) and p.is_file():
            p.unlink(missing_ok=True)
            n += 1
    return n


def _write_atomic(target: Path, data: bytes) -> None:
    tmp = tmp_name(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _copy_atomic(source: Path, target: Path) -> None:
    tmp = tmp_name(target)
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def newest(sources: list[SourceFile], kind: str) -> SourceFile | None:
    """The newest file of a metadata kind (neonUtilities reads the newest variables, validation,
    categoricalCodes and readme files; tables.stack.needed fetches only that one)."""
    found = [s for s in sources if s.parsed.kind == kind]
    return max(found, key=lambda s: (s.parsed.published, s.name)) if found else None


def issue_log_csv(rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ISSUE_LOG_COLUMNS)
    for r in rows:
        w.writerow(["" if r.get(c) is None else r.get(c) for c in ISSUE_LOG_COLUMNS])
    return buf.getvalue().encode()


@dataclass
class Progress:
    """What a build reports as it goes: source files read and tables done, of their totals."""

    report: Callable[[Progress], None] | None = None
    files_total: int = 0
    files_done: int = 0
    tables_total: int = 0
    tables_done: int = 0
    table: str = ""

    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def file_read(self, n: int) -> None:
        with self.lock:
            self.files_done += n
            self._send()

    def table_done(self, name: str) -> None:
        with self.lock:
            self.tables_done += 1
            self.table = name
            self._send()

    def _send(self) -> None:
        if self.report is not None:
            self.report(self)


@dataclass
class Built:
    record: dict[str, Any]
    rebuilt: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def fields_of(sources: list[SourceFile]) -> tuple[SourceFile, tuple[FieldDef, ...]]:
    src = newest(sources, "variables")
    if src is None:
        raise NoVariables("no variables file in the selection")
    return src, parse(src.path.read_bytes())


def older_fields(sources: list[SourceFile], newest_src: SourceFile) -> tuple[tuple[FieldDef, ...], ...]:
    """The fields of the selection's other variables files (one per content, newest first): what
    names a column only an older month's files carry. One that does not parse is passed over."""
    out = []
    for src in distinct_variables(sources):
        if src.name == newest_src.name or (src.md5 is not None and src.md5 == newest_src.md5):
            continue
        try:
            out.append(parse(src.path.read_bytes()))
        except (OSError, ValueError):
            log.warning("passed over the variables file %s: not readable", src.name)
    return tuple(out)


def build(folder: Path, sources: list[SourceFile], *, root: Path, product: str, package: str,
          wanted: list[str] | None, selection: dict[str, Any], citations: list[dict[str, Any]],
          issue_log: list[dict[str, Any]] | None, progress: Progress | None = None) -> Built:
    """Stack the dataset in `folder` from `sources` (all on disk), rebuilding only the tables
    whose sources or fields changed; writes dataset.json last and returns what it recorded."""
    progress = progress or Progress()
    with locked(folder):
        if _clear_leftovers(folder):
            log.info("removed temporary files an interrupted stack left in %s", folder.name)
        var_src, fields = fields_of(sources)
        plans, notes = plan_tables(sources, fields, package, set(wanted) if wanted else None,
                                   older_fields(sources, var_src))
        if wanted:
            missing = sorted(set(wanted) - {p.name for p in plans})
            if missing:
                notes.append(f"No files for table(s) {', '.join(missing)} in this selection.")
        old = load(folder) or {}
        old_tables: dict[str, dict[str, Any]] = old.get("tables") or {}
        results: dict[str, TableResult] = {}
        todo = []
        kept = []
        for plan in plans:
            prior = old_tables.get(plan.name)
            path = folder / plan.file_name
            if prior and prior.get("fingerprint") == plan.fingerprint() and _has(path, prior.get("bytes")):
                results[plan.name] = TableResult.from_json(prior)
                kept.append(plan.name)
                continue
            footer = result_of(path, plan) if path.exists() else None
            if footer is not None:
                results[plan.name] = footer
                kept.append(plan.name)
                continue
            todo.append(plan)
        progress.files_total = sum(len(p.files) for p in todo)
        progress.tables_total = len(todo)

        left_out: dict[str, str] = {}

        def one(plan: TablePlan) -> TableResult | None:
            started = time.monotonic()
            try:
                got = build_table(plan, folder, product=product, progress=progress.file_read)
            except Unreadable as exc:
                # A side table is read beside the data, never instead of it: the data tables stand.
                log.warning("left out %s: %s", plan.name, exc)
                left_out[plan.name] = str(exc)
                progress.table_done(plan.name)
                return None
            log.info("stacked %s: %d rows from %d files in %.1f s", plan.name, got.rows, len(plan.files),
                     time.monotonic() - started)
            progress.table_done(plan.name)
            return got

        # Tables of small files (observational, lab, metadata) are stacked side by side: each is
        # mostly the fixed cost of its reads and its Parquet file. Sensor tables, the large ones,
        # one at a time, so memory holds one table's chunk.
        small = [p for p in todo if p.layout != "sensor"]
        with ThreadPoolExecutor(max_workers=max(1, min(SIDE_BY_SIDE, len(small))),
                                thread_name_prefix="eco-stack-table") as pool:
            futures = {p.name: pool.submit(one, p) for p in small}
            done: dict[str, TableResult | None] = {}
            for plan in todo:
                if plan.layout == "sensor":
                    done[plan.name] = one(plan)
            for name, fut in futures.items():
                done[name] = fut.result()
        results.update({name: got for name, got in done.items() if got is not None})
        for name, why in sorted(left_out.items()):
            (folder / f"{name}.parquet").unlink(missing_ok=True)
            notes.append(_left_out_note(name, why, [p for p in plans if p.layout == "sensor"]))
        # What each table's stacking had to say (columns only some months carry, values kept as
        # text, side-table files left out) is said in the answer too.
        for name in sorted(results):
            notes += [n for n in results[name].notes if n not in notes]
        for name, prior in old_tables.items():
            if name not in results and prior.get("file"):
                (folder / prior["file"]).unlink(missing_ok=True)  # a table this selection no longer has
        files = _side_files(folder, sources, old.get("files") or {}, issue_log)
        record = {
            "version": VERSION,
            "datasetId": folder.name,
            "product": product,
            "package": package,
            "selection": selection,
            "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "variablesFile": var_src.name,
            "releases": sorted({s.release for s in sources}),
            "citations": citations,
            "tables": {name: results[name].to_json() for name in sorted(results)},
            "files": files,
            "notes": notes,
            "sources": [_source_json(s, str(root).rstrip("/") + "/") for s in sorted(sources, key=lambda s: s.name)],
        }
        if todo or not old or _changed(old, record):
            _write_atomic(folder / DATASET_JSON, _json_text(record).encode())
        return Built(record=record, rebuilt=[p.name for p in todo], kept=kept, notes=notes)


def _left_out_note(name: str, why: str, sensors: list[TablePlan]) -> str:
    text = f"{why}; left out, every other table is stacked."
    if name == "sensor_positions" and sensors:
        views = ", ".join(f"{p.name}_positioned" for p in sensors[:5])
        text += f" Without it there are no positioned views ({views}); the sensor tables answer as they are."
    return text


def _json_text(record: dict[str, Any]) -> str:
    """One top-level key per line, each value encoded by json's C encoder (indent would encode
    the whole record in Python, tens of ms for a dataset of a few hundred files)."""
    return "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in record.items()) + "\n}\n"


def _changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    skip = {"updatedAt"}
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


def _source_json(s: SourceFile, root: str) -> dict[str, Any]:
    path = str(s.path)
    rel = path[len(root):] if path.startswith(root) else path
    return {"name": s.name, "md5": s.md5, "release": s.release, "size": os.stat(path).st_size, "path": rel,
            "site": s.parsed.site, "month": s.parsed.month, "table": s.parsed.table}


def _side_files(folder: Path, sources: list[SourceFile], old: dict[str, Any],
                issue_log: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The newest variables, validation, categoricalCodes and readme files copied beside the
    tables (again only when their source changed), and the issue log."""
    out: dict[str, Any] = {}
    for kind, plain in SIDE_FILES.items():
        src = newest(sources, kind)
        if src is None:
            (folder / plain).unlink(missing_ok=True)
            continue
        prior = old.get(kind) or {}
        target = folder / plain
        if prior.get("source") != src.name or prior.get("md5") != src.md5 or not _has(target, prior.get("bytes")):
            _copy_atomic(src.path, target)
        out[kind] = {"file": plain, "source": src.name, "md5": src.md5, "bytes": target.stat().st_size}
    out.update(side_readmes(folder, sources, old))
    if issue_log:
        data = issue_log_csv(issue_log)
        digest = hashlib.md5(data).hexdigest()
        prior = old.get("issue_log") or {}
        target = folder / ISSUE_LOG
        if prior.get("md5") != digest or not _has(target, prior.get("bytes")):
            _write_atomic(target, data)
        out["issue_log"] = {"file": ISSUE_LOG, "md5": digest, "bytes": len(data), "rows": len(issue_log)}
    else:
        (folder / ISSUE_LOG).unlink(missing_ok=True)
    return out


def side_readmes(folder: Path, sources: list[SourceFile], old: dict[str, Any]) -> dict[str, Any]:
    """Each site's newest readme beside the tables as readme.<site>.txt (the readme table's rows:
    a dataset of several sites has one readme each, as NEON publishes them)."""
    out: dict[str, Any] = {}
    sites = sorted({s.parsed.site for s in sources if s.parsed.kind == "readme" and s.parsed.site})
    for site in sites:
        src = max((s for s in sources if s.parsed.kind == "readme" and s.parsed.site == site),
                  key=lambda s: (s.parsed.published, s.name))
        key, target = f"{READMES}{site}", folder / f"readme.{site}.txt"
        prior = old.get(key) or {}
        if prior.get("source") != src.name or prior.get("md5") != src.md5 or not _has(target, prior.get("bytes")):
            _copy_atomic(src.path, target)
        out[key] = {"file": target.name, "source": src.name, "md5": src.md5, "bytes": target.stat().st_size,
                    "site": site}
    for stale in folder.glob("readme.*.txt"):
        if stale.name not in {v["file"] for v in out.values()}:
            stale.unlink(missing_ok=True)
    return out


def table_sources(sources: list[SourceFile]) -> list[SourceFile]:
    """The sources a stack reads: data files, sensor_positions, science review flags and the
    metadata files kept beside the tables (never EML)."""
    keep = {"data", "sensor_positions", "science_review_flags", *SIDE_FILES}
    return [s for s in sources if s.parsed.kind in keep and (s.parsed.kind != "data" or s.parsed.table)]

