"""The stacking engine: NEON's per-site, per-month CSV files of one product into one typed
Parquet file per table, row for row what neonUtilities' `stack_by_table` makes of the same files.

    plans, notes = plan_tables(sources, fields, package, wanted)
    result = build_table(plan, folder, product=..., progress=...)

What neonUtilities does, and so this does:
  - a table's files are found by its name in the file names; its layout by their shape
    (tables.names): sensor (HOR.VER.TMI), site-date, site-all, lab;
  - site-all tables and sensor_positions keep the newest file of each site, lab tables the newest
    file of each lab ("newest" by publication day); science_review_flags keep one row per srfID,
    the one last updated;
  - columns are typed from the variables file (tables.variables.column_type), in its order, for
    the package's fields; empty text stays "" and an empty number or time is null;
  - a table without a siteID column (sensor data, sensor_positions) gets domainID and siteID from
    the file name first, sensor data also horizontalPosition and verticalPosition; every table
    gets publicationDate (the file name's) and release (the source's) last.
Where neonUtilities leaves the choice to the file system's order (two copies of a site-all or lab
file published the same day; a flag's copies updated at the same time) this keeps the one
published last, then the later name.

Each table is written to a temporary name beside its final one and renamed when complete, so a
Parquet file under its final name is always whole. Sensor tables, the large ones, stream file by
file in site, position and month order (already their sorted order), so memory holds one chunk;
the other tables are read whole to be de-duplicated and sorted. Units, descriptions, NEON data
types and formats go into each column's Parquet field metadata.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import secrets
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from tables import names
from tables.variables import SENSOR_POSITIONS_FIELDS, FieldDef, column_type, for_table

# Bumped whenever the same sources would give other Parquet bytes: every table is rebuilt once.
# 2: columns only some files carry are kept; every sensor_positions form is read by its own header.
ENGINE_VERSION = "2"
TMP_SUFFIX = ".tmp"
# Rows gathered before one Parquet row group is written.
CHUNK_ROWS = 1 << 18
# Files read ahead of the one being stacked, on a few threads of the process's own.
READ_AHEAD = 4
_READERS = ThreadPoolExecutor(max_workers=min(READ_AHEAD, os.cpu_count() or 1), thread_name_prefix="eco-stack-read")

Layout = Literal["sensor", "site-date", "site-all", "lab", "sensor_positions", "science_review_flags"]

# neonUtilities' own words for the columns it adds (its added_fields.csv).
ADDED = {
    "domainID": "Unique identifier of the NEON domain",
    "siteID": "NEON site code",
    "horizontalPosition": "Index of horizontal location at a NEON site",
    "verticalPosition": "Index of vertical location at a NEON site",
    "publicationDate": "Date of data publication on the NEON data portal",
    "release": "Identifier for data release",
}
ARROW_TYPES: dict[str, pa.DataType] = {
    "double": pa.float64(), "int64": pa.int64(), "string": pa.string(), "date": pa.date32(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
}
# Which column a table's rows are ordered by after the site (neonUtilities' sort_dat), and which
# give its time span.
DATE_COLUMNS = ("collectDate", "endDate", "startDate", "date", "endDateTime", "startDateTime", "yearMonth", "year")
SPAN_START = ("startDateTime", "startDate", "collectDate", "date", "endDateTime", "endDate", "labSpecificStartDate")
SPAN_END = ("endDateTime", "endDate", "collectDate", "date", "startDateTime", "startDate", "labSpecificEndDate")
# sensor_positions files published before 2024 name their columns differently (2019-2022: every
# one of these; 2017-2018: only the reference coordinates, and no names, periods or references).
OLD_POSITION_COLUMNS = {
    "name": "sensorLocationID", "description": "sensorLocationDescription", "start": "positionStartDateTime",
    "end": "positionEndDateTime", "referenceName": "referenceLocationID",
    "referenceDescription": "referenceLocationIDDescription", "referenceStart": "referenceLocationIDStartDateTime",
    "referenceEnd": "referenceLocationIDEndDateTime", "referenceLatitude": "locationReferenceLatitude",
    "referenceLongitude": "locationReferenceLongitude", "referenceElevation": "locationReferenceElevation",
}
_COLUMN_INDEX = re.compile(r"column #(\d+)")


@dataclass(frozen=True)
class SourceFile:
    """One downloaded NEON file: where it is, its name, MD5 and the release it was published in."""

    path: Path
    name: str
    md5: str | None
    release: str
    parsed: names.Parsed = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parsed", names.parse(self.name))


@dataclass(frozen=True)
class TablePlan:
    name: str
    layout: Layout
    files: tuple[SourceFile, ...]
    fields: tuple[FieldDef, ...]
    package: str
    # The table's other rows in the variables files (the other package's, and fields only older
    # variables files list, newest first): what a column that only some files carry is named by.
    others: tuple[FieldDef, ...] = ()

    @property
    def file_name(self) -> str:
        return f"{self.name}.parquet"

    def fingerprint(self) -> str:
        """Changes when anything the table is made from changes: its files, its fields, the engine."""
        h = hashlib.sha256(f"{ENGINE_VERSION}|{self.name}|{self.layout}|{self.package}\n".encode())
        for f in self.fields:
            h.update(("\x1f".join(f.as_row()) + "\n").encode())
        h.update(b"others\n")
        for f in self.others:
            h.update(("\x1f".join(f.as_row()) + "\n").encode())
        for s in self.files:
            h.update(f"{s.name}|{s.md5}|{s.release}\n".encode())
        return h.hexdigest()[:32]


@dataclass
class ColumnInfo:
    name: str
    type: str
    units: str | None = None


@dataclass
class TableResult:
    name: str
    layout: Layout
    file: str
    rows: int
    columns: list[ColumnInfo]
    fingerprint: str
    sources: list[str]
    bytes: int = 0
    time_span: dict[str, str] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "layout": self.layout, "file": self.file, "rows": self.rows,
                "columns": [{"name": c.name, "type": c.type, "units": c.units} for c in self.columns],
                "fingerprint": self.fingerprint, "sources": self.sources, "bytes": self.bytes,
                "timeSpan": self.time_span, "notes": self.notes}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableResult:
        return cls(name=d["name"], layout=d["layout"], file=d["file"], rows=d["rows"],
                   columns=[ColumnInfo(c["name"], c["type"], c.get("units")) for c in d["columns"]],
                   fingerprint=d["fingerprint"], sources=list(d.get("sources") or []), bytes=d.get("bytes", 0),
                   time_span=d.get("timeSpan"), notes=list(d.get("notes") or []))


Progress = Callable[[int], None]  # called with the number of source files just read


# ------------------------------------------------------------------------------------ planning
def _newest(files: list[SourceFile]) -> SourceFile:
    """neonUtilities' newest copy: the latest publication day; on the same day, the one published
    last (then the later name)."""
    day = max(f.parsed.published_day for f in files)
    return max((f for f in files if f.parsed.published_day == day), key=lambda f: (f.parsed.published, f.name))


def _newest_per(files: list[SourceFile], key: Callable[[SourceFile], str | None]) -> list[SourceFile]:
    groups: dict[str, list[SourceFile]] = {}
    for f in files:
        groups.setdefault(key(f) or "", []).append(f)
    return [_newest(groups[k]) for k in sorted(groups)]


def _order(f: SourceFile) -> tuple[str, ...]:
    p = f.parsed
    return (p.site or p.lab or "", p.hor or "", p.ver or "", p.month or "", p.published, f.name)


def plan_tables(sources: Iterable[SourceFile], fields: tuple[FieldDef, ...], package: str,
                wanted: set[str] | None = None,
                older: tuple[tuple[FieldDef, ...], ...] = ()) -> tuple[list[TablePlan], list[str]]:
    """Which files make each table (de-duplicated as neonUtilities does), in stacking order.
    `wanted`: data table names to keep (sensor_positions and science_review_flags always are).
    `older`: the fields of the selection's older variables files, newest first."""
    by_table: dict[str, list[SourceFile]] = {}
    for s in sources:
        if s.parsed.table is not None:
            by_table.setdefault(s.parsed.table, []).append(s)
    notes: list[str] = []
    plans: list[TablePlan] = []
    for table in sorted(by_table):
        files = sorted(by_table[table], key=_order)
        layout: Layout
        if table == names.SENSOR_POSITIONS:
            layout, files = "sensor_positions", _newest_per(files, lambda f: f.parsed.site)
        elif table == names.SCIENCE_REVIEW_FLAGS:
            layout = "science_review_flags"
        else:
            if wanted is not None and table not in wanted:
                continue
            shapes = {f.parsed.layout for f in files}
            if shapes == {"sensor"}:
                layout = "sensor"
            elif shapes <= {"sensor", "site-date"}:
                layout = "site-date"
            elif len(shapes) == 1:
                layout = shapes.pop()  # type: ignore[assignment]  # one of site-all, lab
            else:
                notes.append(f"{table}: published both per month and once per site or lab in this selection "
                             "(released and provisional data under different schedules); not stacked. Stack "
                             "released and provisional data separately.")
                continue
            if layout == "site-all":
                files = _newest_per(files, lambda f: f.parsed.site)
            elif layout == "lab":
                files = _newest_per(files, lambda f: f.parsed.lab)
        own = for_table(fields, table, package)
        if not own and table == names.SENSOR_POSITIONS:
            own = list(SENSOR_POSITIONS_FIELDS)  # as neonUtilities reads it without the variables file's word
        elif not own:
            notes.append(f"{table}: not in the variables file; its columns are stacked as text.")
        plans.append(TablePlan(table, layout, tuple(files), tuple(_unique(own)), package,
                               _others(table, own, fields, older)))
    return plans, notes


def _others(table: str, own: list[FieldDef], fields: tuple[FieldDef, ...],
            older: tuple[tuple[FieldDef, ...], ...]) -> tuple[FieldDef, ...]:
    """The table's rows in the variables files that are not among its fields: the newest file's
    first (in its order), then those only older files list, each field once, from the newest file
    that lists it."""
    seen = {f.name for f in own}
    out = []
    for rows in (fields, *older):
        for f in for_table(rows, table, "expanded"):
            if f.name not in seen:
                seen.add(f.name)
                out.append(f)
    return tuple(out)


# The metadata files a stack keeps beside its tables: the newest of each kind is read.
METADATA_KINDS = ("variables", "validation", "categorical_codes", "readme")


def needed(file_names: Iterable[str], wanted: set[str] | None = None,
           md5s: dict[str, str | None] | None = None) -> set[str]:
    """The files of a listing a stack reads: the data files of the wanted tables once
    de-duplicated as above (only the newest site-all file of a site and lab file of a lab),
    sensor_positions' newest per site, every science review flag file, and the newest of each
    metadata kind. With the listing's MD5s (`md5s`), also the newest variables file of each other
    content: an older month's may describe fields the newest no longer lists in the package.
    Everything else (EML, older copies) is never fetched."""
    sources = [SourceFile(Path(n), n, (md5s or {}).get(n), "") for n in dict.fromkeys(file_names)]
    plans, _ = plan_tables(sources, (), "basic", wanted)
    out = {f.name for p in plans for f in p.files}
    for kind in METADATA_KINDS:
        found = [s for s in sources if s.parsed.kind == kind]
        if found:
            out.add(max(found, key=lambda s: (s.parsed.published, s.name)).name)
    if md5s:  # a file the listing gives no MD5 for cannot be told apart: only the newest is fetched
        out |= {s.name for s in distinct_variables(s for s in sources if s.md5)}
    # Each site's newest readme too: the readme table has a row per site (tables.side).
    for site in {s.parsed.site for s in sources if s.parsed.kind == "readme"}:
        out.add(max((s for s in sources if s.parsed.kind == "readme" and s.parsed.site == site),
                    key=lambda s: (s.parsed.published, s.name)).name)
    return out


def distinct_variables(sources: Iterable[SourceFile]) -> list[SourceFile]:
    """The newest variables file of each content (by MD5; a file without one stands alone),
    newest first."""
    by_md5: dict[str, SourceFile] = {}
    for s in sources:
        if s.parsed.kind == "variables":
            key = s.md5 or f"name:{s.name}"
            if key not in by_md5 or (s.parsed.published, s.name) > (by_md5[key].parsed.published, by_md5[key].name):
                by_md5[key] = s
    return sorted(by_md5.values(), key=lambda s: (s.parsed.published, s.name), reverse=True)


def _unique(fields: list[FieldDef]) -> list[FieldDef]:
    seen: set[str] = set()
    out = []
    for f in fields:
        if f.name not in seen:
            seen.add(f.name)
            out.append(f)
    return out


# ------------------------------------------------------------------------------------ building
SIDE_LAYOUTS = ("sensor_positions", "science_review_flags")


class Unreadable(Exception):
    """A side table (sensor_positions, science_review_flags) none of whose files could be read."""


def _header(path: Path) -> list[str]:
    """The file's column names; [] when it has none or is not text (a broken download)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _position_names(header: list[str]) -> dict[str, str]:
    """The renames that give a sensor_positions file of an older form the current names (a former
    name is renamed only where the file lacks the current one)."""
    return {old: new for old, new in OLD_POSITION_COLUMNS.items() if old in header and new not in header}


def _metadata(**kv: str | None) -> dict[bytes, bytes]:
    return {k.encode(): v.encode() for k, v in kv.items() if v is not None}


class _Columns:
    """The table's columns in order: types, and the Parquet field of each.

    The package's fields of the newest variables file, plus every column some file carries that
    they do not name (an older month's file may carry a field the newest variables file moved to
    the other package: neonUtilities reads each month by its own variables file and keeps the
    union). Such a column is described by the newest variables file that lists it; a file without
    it has it empty."""

    def __init__(self, plan: TablePlan, headers: dict[str, list[str]]) -> None:
        self.plan = plan
        positions = plan.layout == "sensor_positions"
        # each file's header under the current names (sensor_positions of older forms renamed)
        self.headers = {n: ([_position_names(h).get(c, c) for c in h] if positions else h) for n, h in headers.items()}
        own = list(plan.fields)
        named = {f.name for f in own}
        carried = list(dict.fromkeys(c for h in self.headers.values() for c in h if c))
        extra = [c for c in carried if c not in named]
        by_name = {f.name: f for f in plan.others}
        if own:
            # the extra columns the variables files describe, in their order; then any other
            order = {f.name: i for i, f in enumerate(plan.others)}
            described = sorted((c for c in extra if c in by_name), key=order.__getitem__)
            fields = [*own, *(by_name[c] for c in described)]
            self.undescribed = [c for c in extra if c not in by_name]
        else:
            fields, self.undescribed = [], []
        self.fields = fields
        self.added = [f.name for f in fields if f.name not in named]  # kept although not the package's
        self.read_names = [f.name for f in fields] + self.undescribed if fields else carried
        # Without the variables file's word on a column it is text: a type guessed from one file
        # could refuse the next.
        self.types: dict[str, pa.DataType] = {f.name: ARROW_TYPES[column_type(f)] for f in fields}
        self.types.update({c: pa.string() for c in self.read_names if c not in self.types})
        self.as_text: dict[str, str] = {}  # columns read as text: a value did not parse as their type
        self.skipped: list[str] = []  # side-table files that could not be read
        has_site = "siteID" in self.read_names
        self.site_columns = plan.layout != "lab" and not has_site
        self.position_columns = plan.layout == "sensor" and self.site_columns

    def arrow_field(self, name: str, typ: pa.DataType) -> pa.Field:
        f = next((x for x in self.fields if x.name == name), None)
        if f is None:
            return pa.field(name, typ, metadata=_metadata(description=ADDED.get(name), dataType="string"))
        return pa.field(name, typ, metadata=_metadata(units=f.units, description=f.description, dataType=f.data_type,
                                                      pubFormat=f.pub_format, downloadPkg=f.package))

    def convert(self, rename: dict[str, str] | None = None) -> pacsv.ConvertOptions:
        types = {n: (pa.string() if n in self.as_text else t) for n, t in self.types.items()}
        include = self.read_names
        if rename:  # an old sensor_positions file: read its names, typed as the new ones
            back = {new: old for old, new in rename.items()}
            types = {back.get(n, n): t for n, t in types.items()}
            include = [back.get(n, n) for n in include]
        return pacsv.ConvertOptions(column_types=types, include_columns=include, include_missing_columns=True)

    def partial_notes(self) -> list[str]:
        """What a user must be told of columns not every file carries."""
        table = self.plan.name
        notes = []
        if self.plan.layout == "sensor_positions":
            dateless = [f for f in self.plan.files if f.name in self.headers and self.headers[f.name]
                        and f.name not in self.skipped and "positionStartDateTime" not in self.headers[f.name]]
            if dateless:
                sites = ", ".join(sorted({f.parsed.site or f.name for f in dateless}))
                notes.append(f"{table}: the file of {sites} is in NEON's 2017-2018 form (no location names, no "
                             "position periods): each of its positions is one period, applied to every row of "
                             "that position.")
            return notes
        if self.undescribed:
            notes.append(f"{table}: {', '.join(self.undescribed)} not in any variables file of the selection; "
                         "kept as text, without units.")
        read = [f for f in self.plan.files if f.name not in self.skipped]
        for name in self.added:
            have = [f for f in read if name in self.headers.get(f.name, ())]
            if not have:
                continue
            f = next(x for x in self.fields if x.name == name)
            where = _months(have, read)
            pkg = f"the {f.package} package" if f.package else "no package"
            notes.append(f"{table}: {name} is in the {self.plan.package} files of {where} only (the newest "
                         f"variables file that lists it puts it in {pkg}); kept, empty in the other rows.")
        for f in self.fields:
            if f.name in self.added:
                continue
            have = [x for x in read if f.name in self.headers.get(x.name, ())]
            if have and len(have) < len(read):
                notes.append(f"{table}: {f.name} is in the files of {_months(have, read)} only; empty in the other "
                             "rows.")
        return notes


def _months(have: list[SourceFile], every: list[SourceFile]) -> str:
    """Which files carry a column, said by month where the files have months."""
    months = sorted({f.parsed.month for f in have if f.parsed.month})
    total = len({f.parsed.month for f in every if f.parsed.month})
    if months and all(f.parsed.month for f in every):
        shown = ", ".join(months) if len(months) <= 6 else f"{months[0]} to {months[-1]}"
        return f"{len(months)} of {total} months ({shown})"
    return f"{len(have)} of {len(every)} files"


def _constant(value: str, n: int) -> pa.Array:
    """`value` n times, built from buffers: converting Python objects (pa.array, pa.scalar) makes
    pyarrow import pandas, a second of start-up and tens of MB that stacking never needs."""
    data = value.encode()
    offsets = np.arange(0, (n + 1) * len(data), len(data) or 1, dtype=np.int32) if data else np.zeros(n + 1, np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data * n))


def _read(source: SourceFile, cols: _Columns, sensor: bool) -> pa.Table:
    rename = None
    if cols.plan.layout == "sensor_positions":
        rename = _position_names(_header(source.path)) or None
    big = source.path.stat().st_size > 1 << 20
    table = pacsv.read_csv(
        source.path,
        # A large file is parsed in blocks on pyarrow's threads; a small one in one block on this one.
        read_options=pacsv.ReadOptions(use_threads=big, block_size=1 << 20),
        # Free text in observational tables may hold line breaks inside quotes; sensor data never does.
        parse_options=pacsv.ParseOptions(newlines_in_values=not sensor),
        convert_options=cols.convert(rename))
    if rename:
        table = table.rename_columns([rename.get(n, n) for n in table.column_names])
    return table.select(cols.read_names)


def _parts(plan: TablePlan, cols: _Columns, sensor: bool) -> Iterator[pa.Table | None]:
    """Each file of the plan read and given its added columns, in the plan's order, READ_AHEAD
    files at a time on the readers' threads (pyarrow parses without the GIL): a small file's read
    is mostly fixed cost, and a table of a hundred of them would pay it a hundred times in turn."""
    pending: deque[Future[pa.Table]] = deque()
    files = iter(plan.files)
    try:
        for source in files:
            pending.append(_READERS.submit(_prepared, source, cols, sensor))
            if len(pending) >= READ_AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()


def _prepared(source: SourceFile, cols: _Columns, sensor: bool) -> pa.Table | None:
    if cols.plan.layout in SIDE_LAYOUTS and source.name in cols.skipped:
        return None
    return _with_added(_read(source, cols, sensor), source, cols)


def _with_added(table: pa.Table, source: SourceFile, cols: _Columns) -> pa.Table:
    n = table.num_rows
    p = source.parsed
    arrays: list[pa.Array | pa.ChunkedArray] = []
    names_: list[str] = []
    if cols.site_columns:
        arrays += [_constant(p.domain or "", n), _constant(p.site or "", n)]
        names_ += ["domainID", "siteID"]
    if cols.position_columns:
        arrays += [_constant(p.hor or "", n), _constant(p.ver or "", n)]
        names_ += ["horizontalPosition", "verticalPosition"]
    arrays += table.columns
    names_ += table.column_names
    arrays += [_constant(p.published, n), _constant(source.release, n)]
    names_ += ["publicationDate", "release"]
    return pa.Table.from_arrays(arrays, names=names_)


def _schema(sample: pa.Table, cols: _Columns, plan: TablePlan, fingerprint: str, product: str) -> pa.Schema:
    fields = [cols.arrow_field(n, sample.schema.field(n).type) for n in sample.column_names]
    meta = {"eco.product": product, "eco.table": plan.name, "eco.layout": plan.layout, "eco.package": plan.package,
            "eco.fingerprint": fingerprint, "eco.engine": ENGINE_VERSION}
    return pa.schema(fields, metadata=meta)


def _sorted(table: pa.Table, plan: TablePlan) -> pa.Table:
    if plan.layout == "science_review_flags" and "srfID" in table.column_names:
        keys = [("srfID", "ascending")]
        if "lastUpdateDateTime" in table.column_names:
            keys.append(("lastUpdateDateTime", "descending"))
        keys += [("publicationDate", "descending")]
        table = table.take(pc.sort_indices(table, sort_keys=keys))
        if table.num_rows > 1:  # the first row of each srfID: the one last updated, then last published
            ids = table.column("srfID").combine_chunks()
            differs = pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1))
            changed = pc.or_kleene(differs, pc.is_null(differs))
            table = table.filter(pa.concat_arrays([pc.is_valid(ids.slice(0, 1)), changed]))
    if plan.layout in ("sensor", "sensor_positions"):
        return table  # already in site, position and time order
    keys = [("siteID", "ascending")] if "siteID" in table.column_names else []
    date = next((c for c in DATE_COLUMNS if c in table.column_names), None)
    if date:
        keys.append((date, "ascending"))
    return table.take(pc.sort_indices(table, sort_keys=keys)) if keys and table.num_rows else table


def _span_of(table: pa.Table, candidates: tuple[str, ...], which: str) -> tuple[str, Any] | None:
    for name in candidates:
        if name in table.column_names:
            typ = table.schema.field(name).type
            if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
                col = table.column(name)
                if col.null_count == len(col):
                    continue
                return name, _plain(pc.min_max(col)[which])
    return None


def _plain(value: pa.Scalar) -> datetime | date:
    """A timestamp or date scalar as Python's, read as a number (a timestamp's or date's as_py()
    would import pandas)."""
    if pa.types.is_timestamp(value.type):
        ms = value.cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).as_py()
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return date(1970, 1, 1) + timedelta(days=value.cast(pa.date32()).cast(pa.int32()).as_py())


class _Span:
    def __init__(self) -> None:
        self.start: tuple[str, Any] | None = None
        self.end: tuple[str, Any] | None = None

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        got = _span_of(table, SPAN_START, "min")
        if got and (self.start is None or got[1] < self.start[1]):
            self.start = got
        got = _span_of(table, SPAN_END, "max")
        if got and (self.end is None or got[1] > self.end[1]):
            self.end = got

    def to_json(self) -> dict[str, str] | None:
        if self.start is None or self.end is None:
            return None

        def iso(v: Any) -> str:
            return v.strftime("%Y-%m-%dT%H:%M:%SZ") if hasattr(v, "hour") else v.isoformat()

        return {"start": iso(self.start[1]), "end": iso(self.end[1]), "startColumn": self.start[0],
                "endColumn": self.end[0]}


def tmp_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.{secrets.token_hex(6)}{TMP_SUFFIX}")


def _side_file_ok(plan: TablePlan, header: list[str]) -> bool:
    """Whether a side table's file looks like one (its key column is there): a broken download, an
    error page saved under its name, is left out rather than failing the dataset."""
    key = "HOR.VER" if plan.layout == "sensor_positions" else "srfID"
    return key in header


def build_table(plan: TablePlan, folder: Path, *, product: str, progress: Progress | None = None) -> TableResult:
    """Stack one table into folder/<name>.parquet (written under a temporary name, then renamed).
    A side table's unreadable files are left out with a note (Unreadable when none is left)."""
    side = plan.layout in SIDE_LAYOUTS
    headers = {f.name: _header(f.path) for f in plan.files}
    skipped = [f.name for f in plan.files if side and not _side_file_ok(plan, headers[f.name])]
    cols = _Columns(plan, {n: h for n, h in headers.items() if n not in skipped})
    cols.skipped = skipped
    while True:
        if side and plan.files and len(cols.skipped) == len(plan.files):
            raise Unreadable(f"{plan.name}: none of its {len(plan.files)} file(s) could be read as a table")
        try:
            return _build(plan, folder, cols, product, progress)
        except pa.ArrowInvalid as exc:
            column = _failed_column(exc, cols, plan)
            if column is not None:
                cols.as_text[column] = cols.types[column].__str__()
                continue
            bad = _unparsable_file(plan, cols) if side else None
            if bad is None:
                raise
            cols.skipped.append(bad)


def _unparsable_file(plan: TablePlan, cols: _Columns) -> str | None:
    """The first side-table file not yet skipped that does not parse on its own, if any."""
    for source in plan.files:
        if source.name in cols.skipped:
            continue
        try:
            _read(source, cols, False)
        except (pa.ArrowInvalid, OSError, UnicodeDecodeError):
            return source.name
    return None


def _failed_column(exc: pa.ArrowInvalid, cols: _Columns, plan: TablePlan) -> str | None:
    """The typed column a conversion error names (CSV column numbers count from 0 in the file)."""
    m = _COLUMN_INDEX.search(str(exc))
    if not m:
        return None
    # The failing file is not named in the error: any file's header gives the same name unless
    # files differ in columns, so look for one whose column holds a typed, not yet textual column.
    index = int(m.group(1))
    for source in plan.files:
        header = cols.headers.get(source.name, [])
        if index < len(header) and header[index] in cols.types and header[index] not in cols.as_text:
            return header[index]
    return None


def _build(plan: TablePlan, folder: Path, cols: _Columns, product: str, progress: Progress | None) -> TableResult:
    final = folder / plan.file_name
    tmp = tmp_name(final)
    fingerprint = plan.fingerprint()
    sensor = plan.layout == "sensor"
    span = _Span()
    rows = 0
    writer: pq.ParquetWriter | None = None
    schema: pa.Schema | None = None
    try:
        pending: list[pa.Table] = []
        held = 0
        for part in _parts(plan, cols, sensor):
            if part is None:  # a side table's file left out
                if progress:
                    progress(1)
                continue
            if schema is None:
                schema = _schema(part, cols, plan, fingerprint, product)
            part = part.cast(schema)
            pending.append(part)
            held += part.num_rows
            if progress:
                progress(1)
            if sensor and held >= CHUNK_ROWS:
                chunk = pa.concat_tables(pending)
                writer = writer or pq.ParquetWriter(tmp, schema, compression="zstd")
                writer.write_table(chunk)
                span.add(chunk)
                rows += chunk.num_rows
                pending, held = [], 0
        if schema is None:  # no files: an empty table of the variables' columns
            empty = pa.table({f.name: pa.nulls(0, ARROW_TYPES[column_type(f)]) for f in cols.fields})
            schema = _schema(empty, cols, plan, fingerprint, product)
        rest = pa.concat_tables(pending) if pending else schema.empty_table()
        if not sensor:
            rest = _sorted(rest, plan)
        writer = writer or pq.ParquetWriter(tmp, schema, compression="zstd")
        writer.write_table(rest)
        span.add(rest)
        rows += rest.num_rows
        writer.close()
        writer = None
        os.replace(tmp, final)
    except BaseException:
        if writer is not None:
            try:
                writer.close()
            except Exception:  # already failing: the temporary file goes either way
                pass
        tmp.unlink(missing_ok=True)
        raise
    notes = [f"{plan.name}: {name} kept as text, a value did not parse as {typ}" for name, typ in cols.as_text.items()]
    if cols.skipped:
        notes.append(f"{plan.name}: left out {len(cols.skipped)} of its {len(plan.files)} files, which could not be "
                     f"read as a table ({', '.join(cols.skipped)}); the other files are stacked.")
    notes += cols.partial_notes()
    columns = [ColumnInfo(f.name, _type_name(f.type), _units(f)) for f in schema]
    return TableResult(name=plan.name, layout=plan.layout, file=plan.file_name, rows=rows, columns=columns,
                       fingerprint=fingerprint, sources=[s.name for s in plan.files], bytes=final.stat().st_size,
                       time_span=span.to_json(), notes=notes)


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "timestamp"
    return {"double": "double", "int64": "int64", "string": "string", "date32[day]": "date"}.get(str(t), str(t))


def _units(f: pa.Field) -> str | None:
    units = (f.metadata or {}).get(b"units", b"").decode()
    return None if units in ("", "NA") else units


def fingerprint_of(path: Path) -> str | None:
    """The fingerprint a finished Parquet file was built from (read from its footer), or None."""
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException):
        return None
    value = meta.get(b"eco.fingerprint")
    return value.decode() if value else None


def result_of(path: Path, plan: TablePlan) -> TableResult | None:
    """A table built earlier whose footer says it was made from exactly this plan (a run cut off
    before it could record it), described from its footer."""
    try:
        pf = pq.ParquetFile(path)
    except (OSError, pa.ArrowException):
        return None
    meta = pf.schema_arrow.metadata or {}
    if meta.get(b"eco.fingerprint", b"").decode() != plan.fingerprint():
        return None
    span = _Span()
    wanted = [n for n in pf.schema_arrow.names if n in {*SPAN_START, *SPAN_END}]
    if wanted:
        span.add(pf.read(columns=wanted))
    columns = [ColumnInfo(f.name, _type_name(f.type), _units(f)) for f in pf.schema_arrow]
    return TableResult(name=plan.name, layout=plan.layout, file=plan.file_name, rows=pf.metadata.num_rows,
                       columns=columns, fingerprint=plan.fingerprint(), sources=[s.name for s in plan.files],
                       bytes=path.stat().st_size, time_span=span.to_json())

