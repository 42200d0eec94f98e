"""Read-only SQL over one stacked dataset, in DuckDB, inside a sandbox.

    folder = dataset_folder(download_dir, dataset_id)     the one place an id becomes a folder
    run = QueryRun(Dataset.open(folder), sql, limit, Limits(...))
    result = run.start().result()                         on a thread of its own; run.cancel() stops it

Each query gets a connection of its own (in memory, nothing shared between callers): every table
of the dataset becomes a view over its Parquet file, the variables file a small table, and each
sensor table a `<table>_positioned` view joined with sensor_positions. Then file access is
switched off except for exactly those Parquet files, the configuration is locked, and the caller's
SQL runs under a memory limit, a thread limit and a wall-time limit (a timer interrupts it).

Before it runs, the SQL is parsed by DuckDB itself: exactly one SELECT (or WITH, VALUES, FROM,
DESCRIBE, SUMMARIZE) statement; every table it names must be one of the dataset's (or a CTE of the
query); table functions other than range, generate_series and unnest, and functions that read the
configuration or the catalog (which would show the server's paths), are refused by name.

Times are exposed as TIMESTAMP in UTC (the Parquet files hold UTC instants): DuckDB's calendar
functions on TIMESTAMP WITH TIME ZONE go through its time-zone library row by row, several times
slower for a monthly aggregate.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import decimal
import json
import logging
import math
import re
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from eco_core.errors import EcoError
from eco_core.memo import memos
from tables import dataset, names
from tables.layout import POSITIONED

log = logging.getLogger("eco.tables")
# A dataset id as tables.dataset.dataset_id makes it: product.package.start.end.digest.
DATASET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
VARIABLES = "variables"
# Table functions a query may call: generators only (every reader of files is refused by name).
TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
# Functions that read the engine's configuration or catalog, which holds the dataset's paths.
DENIED_FUNCTIONS = frozenset({"current_setting", "getvariable", "getenv", "current_schemas"})
DENIED_PREFIXES = ("duckdb_", "pragma_", "read_", "parquet_", "sqlite_", "iceberg_", "delta_")
SCHEMAS = frozenset({"", "main", "memory", "temp"})
# Rows counted past the limit for the total, and the seconds spent counting them.
COUNT_MAX_ROWS = 10_000_000
COUNT_BUDGET_S = 1.0
TIME_COLUMNS_FOR_POSITION = ("startDateTime", "endDateTime")
# The columns a positioned view adds, from sensor_positions (names as NEON's, references renamed).
POSITION_COLUMNS = (
    ("sensorLocationID", "sensorLocationID"), ("sensorLocationDescription", "sensorLocationDescription"),
    ("positionStartDateTime", "positionStartDateTime"), ("positionEndDateTime", "positionEndDateTime"),
    ("xOffset", "xOffset"), ("yOffset", "yOffset"), ("zOffset", "zOffset"),
    ("referenceLatitude", "locationReferenceLatitude"), ("referenceLongitude", "locationReferenceLongitude"),
    ("referenceElevation", "locationReferenceElevation"),
)
TYPE_NAMES = {"VARCHAR": "string", "DOUBLE": "double", "FLOAT": "double", "BIGINT": "int64", "INTEGER": "int32",
              "SMALLINT": "int16", "TINYINT": "int8", "HUGEINT": "int128", "UBIGINT": "uint64", "BOOLEAN": "boolean",
              "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamp",
              "TIME": "time", "INTERVAL": "interval", "BLOB": "binary", "UUID": "string"}
_LINE = re.compile(r"\nLINE (\d+): (.*)\n( *)\^")
# The rest of a truncated result is only counted, through Arrow batches: DuckDB's warning about
# the copy Arrow output of a cursor makes does not apply. A process-wide filter, set once, as a
# filter set per query (warnings.catch_warnings) is not safe across threads.
warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)



def dataset_folder(download_dir: Path, dataset_id: str) -> Path | None:
    """The folder of a dataset eco_stack_tables made on stdio, or None when there is none by that id."""
    return folder_in(download_dir / dataset.FOLDER, dataset_id)


def folder_in(root: Path, dataset_id: str) -> Path | None:
    """The dataset `dataset_id` under `root` (the download directory's datasets, or the server's
    store), or None. Where an id becomes a path: the folder must be a real directory directly
    under `root` (no link out of it) and hold a dataset.json."""
    if not DATASET_ID.fullmatch(dataset_id) or dataset_id.strip(".") == "":
        return None
    folder = root / dataset_id
    try:
        if folder.is_symlink() or not folder.is_dir() or folder.resolve().parent != root.resolve():
            return None
    except OSError:
        return None
    return folder if (folder / dataset.DATASET_JSON).is_file() else None


def dataset_ids(download_dir: Path) -> list[str]:
    """The ids of the datasets in the download directory (for suggestions)."""
    root = download_dir / dataset.FOLDER
    try:
        return sorted(p.name for p in root.iterdir() if (p / dataset.DATASET_JSON).is_file())
    except OSError:
        return []


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_mb: int
    threads: int


@dataclass
class Table:
    """One relation a query can name: its columns' units and the releases of its sources."""

    name: str
    file: str | None  # the Parquet file under the folder; None: built in memory (variables)
    columns: dict[str, str | None]
    timestamps: list[str]
    releases: set[str]
    layout: str = ""
    reads: tuple[str, ...] = ()  # the stacked tables it reads (a positioned view: two)


@dataclass
class Dataset:
    folder: Path
    record: dict[str, Any]
    tables: dict[str, Table]  # by lower-case name

    @classmethod
    def open(cls, folder: Path) -> Dataset:
        record = dataset.load(folder)
        if record is None:
            raise EcoError("not_found", f"dataset_id: {folder.name} has no readable dataset.json (stack it again)",
                           details={"field": "dataset_id"})
        return cls(folder, record, _relations(folder, record))

    @property
    def id(self) -> str:
        return str(self.record.get("datasetId") or self.folder.name)

    def names(self) -> list[str]:
        return sorted(t.name for t in self.tables.values())


def _relations(folder: Path, record: dict[str, Any]) -> dict[str, Table]:
    by_source = {s["name"]: s.get("release") for s in record.get("sources") or []}
    out: dict[str, Table] = {}
    for t in (record.get("tables") or {}).values():
        cols = {c["name"]: c.get("units") for c in t["columns"]}
        times = [c["name"] for c in t["columns"] if c["type"] == "timestamp"]
        releases = {r for r in (by_source.get(s) for s in t.get("sources") or []) if r}
        out[t["name"].lower()] = Table(t["name"], t["file"], cols, times, releases, t.get("layout", ""),
                                       (t["name"],))
    positions = out.get(names.SENSOR_POSITIONS)
    if positions is not None and {"siteID", "HOR.VER", "zOffset"} <= set(positions.columns):
        for t in list(out.values()):
            if t.layout != "sensor" or not {"siteID", "horizontalPosition", "verticalPosition"} <= set(t.columns):
                continue
            added = {new: positions.columns.get(old) for new, old in POSITION_COLUMNS if old in positions.columns}
            added.update(heightRank=None, sensorElevation=positions.columns.get("zOffset"))
            name = t.name + POSITIONED
            out[name.lower()] = Table(name, None, {**t.columns, **added}, t.timestamps, t.releases | positions.releases,
                                      "positioned", (t.name, positions.name))
    var = (record.get("files") or {}).get("variables")
    if var and VARIABLES not in out:
        release = by_source.get(var.get("source"))
        out[VARIABLES] = Table(VARIABLES, None, {}, [], {release} if release else set(), "variables", (VARIABLES,))
    return out


# ------------------------------------------------------------------------------------ the SQL
@dataclass
class Checked:
    """What the parser tells of an accepted query: the dataset's relations it names, and for the
    units, each result column's source when it is a bare column (renamed or not)."""

    tables: list[Table]
    units: dict[str, str | None]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _where(sql: str, message: str) -> dict[str, int]:
    """The position (0-based, and line/column from 1) of DuckDB's caret in `message`, when the
    line it quotes is the query's."""
    m = _LINE.search(message)
    if not m:
        return {}
    line_no, text, caret = int(m.group(1)), m.group(2), len(m.group(3)) - len(f"LINE {m.group(1)}: ")
    lines = sql.split("\n")
    if not 1 <= line_no <= len(lines):
        return {}
    line = lines[line_no - 1]
    start = line.find(text.strip("."))
    if start < 0 or caret < 0:
        return {}
    column = start + caret - (len(text) - len(text.lstrip(".")))
    return {"position": sum(len(x) + 1 for x in lines[: line_no - 1]) + column, "line": line_no, "column": column + 1}


def _engine_message(exc: BaseException, folder: Path) -> str:
    """DuckDB's message without its quoted query lines, and never with the dataset's path."""
    text = str(exc).split("\n\nLINE ")[0].strip()
    return text.replace(str(folder.resolve()), "<dataset>").replace(str(folder), "<dataset>")


def statements(con: duckdb.DuckDBPyConnection, sql: str, folder: Path) -> dict[str, Any]:
    """The one statement's syntax tree (DuckDB's JSON form); invalid_argument otherwise."""
    try:
        found = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise _bad_sql(sql, exc, folder) from None
    if len(found) != 1:
        raise EcoError("invalid_argument", f"sql: one statement only (found {len(found)}); send each query in its "
                       "own call", details={"field": "sql", "statements": len(found)})
    kind = found[0].type
    if kind != duckdb.StatementType.SELECT:
        raise EcoError("invalid_argument", f"sql: only a SELECT (or WITH ... SELECT) statement is run here, not "
                       f"{kind.name}: the tables are read-only and the engine's settings are fixed",
                       details={"field": "sql", "statementType": kind.name})
    row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {}
    if tree.get("error"):
        pos = int(tree.get("position") or 0)
        raise EcoError("invalid_argument", f"sql: {tree.get('error_message')}",
                       details={"field": "sql", "position": pos, **_line_col(sql, pos)})
    if len(tree.get("statements") or []) != 1:
        raise EcoError("invalid_argument", "sql: one SELECT statement only", details={"field": "sql"})
    return tree["statements"][0]["node"]  # type: ignore[no-any-return]


def _line_col(sql: str, pos: int) -> dict[str, int]:
    before = sql[:pos]
    return {"line": before.count("\n") + 1, "column": pos - (before.rfind("\n") + 1) + 1}


def _walk(node: Any) -> Any:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def suggest(word: str, choices: list[str], n: int = 5) -> list[str]:
    from rapidfuzz import fuzz, process

    got = process.extract(word, choices, scorer=fuzz.WRatio, limit=n)
    return [c for c, score, _ in got if score >= 50] or choices[:n]


def check(ds: Dataset, node: dict[str, Any], sql: str) -> Checked:
    """Refuses what the sandbox does not run (by name, before anything runs) and finds the
    relations the query reads and the units of its bare columns."""
    ctes = {str(e["key"]).lower() for d in _walk(node) if isinstance(d.get("cte_map"), dict)
            for e in d["cte_map"].get("map") or []}
    read: dict[str, Table] = {}
    for d in _walk(node):
        typ = d.get("type")
        if typ == "BASE_TABLE":
            name = str(d.get("table_name") or "")
            schema = str(d.get("schema_name") or "").lower()
            catalog = str(d.get("catalog_name") or "").lower()
            t = ds.tables.get(name.lower())
            if schema in SCHEMAS and catalog in SCHEMAS and (t is not None or (not schema and name.lower() in ctes)):
                if t is not None:
                    read[t.name] = t
                continue
            where = _position(sql, d)
            shown = ".".join(x for x in (catalog, schema, name) if x)
            raise EcoError("not_found", f"sql: no table {shown!r} in dataset {ds.id}; its tables are "
                           f"{', '.join(ds.names())}", details={"field": "sql", **where,
                                                                 "didYouMean": suggest(name, ds.names())})
        if typ == "TABLE_FUNCTION":
            fn = str((d.get("function") or {}).get("function_name") or "").lower()
            if fn not in TABLE_FUNCTIONS:
                raise EcoError("invalid_argument", f"sql: table function {fn}() is not available here: a query "
                               f"reads the dataset's tables by name ({', '.join(ds.names())}); of table functions "
                               f"only {', '.join(sorted(TABLE_FUNCTIONS))} run",
                               details={"field": "sql", **_position(sql, d), "didYouMean": ds.names()[:10]})
        fn_name = d.get("function_name")
        if d.get("class") == "FUNCTION" and isinstance(fn_name, str):
            low = fn_name.lower()
            if low in DENIED_FUNCTIONS or low.startswith(DENIED_PREFIXES):
                raise EcoError("invalid_argument", f"sql: function {fn_name}() is not available here (it reads the "
                               "engine's configuration, catalog or files)", details={"field": "sql",
                                                                                      **_position(sql, d)})
    return Checked(tables=list(read.values()), units=_units(ds, node))


def _position(sql: str, d: dict[str, Any]) -> dict[str, int]:
    pos = d.get("query_location")
    if not isinstance(pos, int) or pos < 0 or pos > len(sql):
        pos = (d.get("function") or {}).get("query_location") if isinstance(d.get("function"), dict) else None
        if not isinstance(pos, int) or pos < 0 or pos > len(sql):
            return {}
    return {"position": pos, **_line_col(sql, pos)}


def _from_tables(ref: Any, ds: Dataset, out: dict[str, Table | None]) -> None:
    """Alias -> relation of the FROM clause of one SELECT (None: a subquery, CTE or function)."""
    if not isinstance(ref, dict):
        return
    typ = ref.get("type")
    if typ == "JOIN":
        _from_tables(ref.get("left"), ds, out)
        _from_tables(ref.get("right"), ds, out)
        return
    alias = str(ref.get("alias") or "").lower()
    if typ == "BASE_TABLE":
        name = str(ref.get("table_name") or "").lower()
        out[alias or name] = ds.tables.get(name)
    elif typ != "EMPTY":
        out[alias or f"#{len(out)}"] = None


def _units(ds: Dataset, node: dict[str, Any]) -> dict[str, str | None]:
    """Units of the result columns that are bare column references of the dataset's relations
    (a plain rename included): every other column is derived and has none. Set operations,
    DESCRIBE and the like have none."""
    if node.get("type") != "SELECT_NODE":
        return {}
    from_: dict[str, Table | None] = {}
    _from_tables(node.get("from_table"), ds, from_)
    units: dict[str, str | None] = {}
    derived: set[str] = set()

    def put(name: str, value: str | None) -> None:
        key = name.lower()
        if key in units and units[key] != value:
            derived.add(key)  # the same name with other units from two relations: say none
        units[key] = value

    def lookup(qualifier: str | None, column: str) -> tuple[bool, str | None]:
        rels = [from_.get(qualifier.lower())] if qualifier else list(from_.values())
        found = [r.columns[c] for r in rels if r is not None for c in r.columns if c.lower() == column.lower()]
        if not found or (any(r is None for r in rels) and not qualifier):
            return False, None
        return (True, found[0]) if len(set(found)) == 1 else (False, None)

    for item in node.get("select_list") or []:
        cls = item.get("class")
        alias = str(item.get("alias") or "")
        if cls == "COLUMN_REF":
            parts = [str(p) for p in item.get("column_names") or []]
            if not parts:
                continue
            ok, value = lookup(parts[-2] if len(parts) > 1 else None, parts[-1])
            name = alias or parts[-1]
            if ok:
                put(name, value)
            else:
                derived.add(name.lower())
        elif cls == "STAR" and not item.get("columns") and item.get("expr") is None:
            relation = str(item.get("relation_name") or "").lower()
            rels = [from_.get(relation)] if relation else list(from_.values())
            for r in rels:
                if r is None:
                    continue
                for c, u in r.columns.items():
                    put(c, u)
            for rep in item.get("replace_list") or []:
                derived.add(str(rep.get("alias") or rep.get("name") or "").lower())
        else:
            derived.add(alias.lower() if alias else f"#{len(derived)}")
    return {k: v for k, v in units.items() if k not in derived}


def _bad_sql(sql: str, exc: BaseException, folder: Path) -> EcoError:
    return EcoError("invalid_argument", f"sql: {_engine_message(exc, folder)}",
                    details={"field": "sql", **_where(sql, str(exc))})


_MISSING_COLUMN = re.compile(r'Referenced column "([^"]+)" not found')
_CANDIDATES = re.compile(r'Candidate bindings: (.*)')


def engine_error(exc: duckdb.Error, sql: str, ds: Dataset, checked: Checked | None, limits: Limits,
                 cancelled: bool) -> EcoError:
    """DuckDB's error as the tool's: the field, the engine's message, the position."""
    where = _where(sql, str(exc))
    msg = _engine_message(exc, ds.folder)
    if isinstance(exc, duckdb.InterruptException):
        if cancelled:
            raise concurrent.futures.CancelledError()
        return EcoError("query_too_large", f"sql: the query ran past {limits.timeout_s:g} s and was cancelled "
                        "(tables.query_timeout_s)", details={"field": "sql", "reason": "time",
                                                              "limitSeconds": limits.timeout_s},
                        hint="Narrow it: a WHERE on siteID or a time range, fewer columns, or GROUP BY to aggregate.")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return EcoError("query_too_large", f"sql: the query needs more than {limits.memory_mb} MB of memory and was "
                        "stopped (tables.query_memory_mb)", details={"field": "sql", "reason": "memory",
                                                                     "limitMb": limits.memory_mb},
                        hint="Narrow it: join on keys rather than every pair of rows, filter first, or aggregate.")
    missing = _MISSING_COLUMN.search(msg)
    if missing:
        rels = checked.tables if checked and checked.tables else list(ds.tables.values())
        columns = sorted({c for t in rels for c in t.columns})
        cand = _CANDIDATES.search(msg)
        named = [c.strip().strip('"').split(".")[-1] for c in cand.group(1).split(",")] if cand else []
        guesses = list(dict.fromkeys([*suggest(missing.group(1), columns), *[c for c in named if c in columns]]))
        return EcoError("not_found", f"sql: {msg}", details={"field": "sql", **where, "didYouMean": guesses[:8]})
    if isinstance(exc, duckdb.PermissionException):
        return EcoError("invalid_argument", f"sql: {msg} (a query reads only this dataset's tables)",
                        details={"field": "sql", **where})
    return EcoError("invalid_argument", f"sql: {msg}", details={"field": "sql", **where})


# ------------------------------------------------------------------------------------ running
@dataclass
class Column:
    name: str
    type: str
    units: str | None


@dataclass
class Result:
    columns: list[Column]
    rows: list[list[Any]]
    more: bool  # rows past the limit exist
    total: int | None
    seconds: float
    tables: list[Table]
    dataset: Dataset


def _type_name(t: Any) -> str:
    text = str(t)
    return TYPE_NAMES.get(text, text.lower())


def plain(v: Any) -> Any:
    """A DuckDB value as JSON: times as ISO 8601 in UTC, NaN and infinities as null."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.UTC).replace(tzinfo=None)
        return v.isoformat() + "Z"
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return str(v)


def _timestamp_view(name: str, path: Path, timestamps: list[str]) -> str:
    source = f"read_parquet('{str(path).replace(chr(39), chr(39) * 2)}')"
    if not timestamps:
        return f"CREATE VIEW {_quote(name)} AS SELECT * FROM {source}"
    replace = ", ".join(f"make_timestamp(epoch_us({_quote(c)})) AS {_quote(c)}" for c in timestamps)
    return f"CREATE VIEW {_quote(name)} AS SELECT * REPLACE ({replace}) FROM {source}"


def _position_value(positions: Table, name: str, typ: str) -> str:
    """A sensor_positions column as `typ` (NULL where the table has no such column, or a value does
    not convert): every form NEON published reads through the same view."""
    return f"TRY_CAST({_quote(name)} AS {typ})" if name in positions.columns else f"CAST(NULL AS {typ})"


def _positioned_view(t: Table, positions: Table) -> str:
    """Each row of a sensor table with the position it was measured at: sensor_positions matched
    by site, HOR.VER and the position's period (a sensor moved mid-record has two periods, each
    with its own zOffset). The period is NEON's effective one where the file gives it, else the
    position's; a position of a file without periods (the 2017-2018 form) is one period. Rows of
    one period that differ only in their reference's period count once (the latest reference),
    so no data row is doubled."""
    when = next((c for c in TIME_COLUMNS_FOR_POSITION if c in t.columns), None)
    picked = ", ".join(f"{_quote(old)} AS {_quote(new)}" for new, old in POSITION_COLUMNS if old in positions.columns)
    start = _position_value(positions, "positionStartDateTime", "TIMESTAMP")
    end = _position_value(positions, "positionEndDateTime", "TIMESTAMP")
    if "effectiveStartDateTime" in positions.columns:
        start = f"coalesce({_position_value(positions, 'effectiveStartDateTime', 'TIMESTAMP')}, {start})"
    if "effectiveEndDateTime" in positions.columns:
        end = f"coalesce({_position_value(positions, 'effectiveEndDateTime', 'TIMESTAMP')}, {end})"
    reference = _position_value(positions, "referenceLocationIDStartDateTime", "TIMESTAMP")
    z = _position_value(positions, "zOffset", "DOUBLE")
    elevation = _position_value(positions, "locationReferenceElevation", "DOUBLE")
    during = (f" AND (p._start IS NULL OR d.{_quote(when)} >= p._start) AND (p._end IS NULL OR d.{_quote(when)} < "
              "p._end)") if when else ""
    added = ", ".join(f"p.{_quote(new)}" for new, old in POSITION_COLUMNS if old in positions.columns)
    return (
        f"CREATE VIEW {_quote(t.reads[0] + POSITIONED)} AS "
        "WITH p0 AS (SELECT siteID AS _site, split_part(\"HOR.VER\", '.', 1) AS _hor, "
        f"split_part(\"HOR.VER\", '.', 2) AS _ver, {start} AS _start, {end} AS _end, {reference} AS _reference, "
        f"{z} AS _z, {elevation} AS _elevation, {picked} FROM {_quote(positions.name)}), "
        "p1 AS (SELECT * FROM p0 QUALIFY row_number() OVER (PARTITION BY _site, _hor, _ver, _start ORDER BY "
        "_reference DESC NULLS LAST) = 1), "
        "r AS (SELECT _site, _hor, _ver, dense_rank() OVER (PARTITION BY _site, _hor ORDER BY "
        "arg_max(_z, coalesce(_start, TIMESTAMP '1900-01-01')) DESC NULLS LAST) AS heightRank FROM p1 "
        "GROUP BY _site, _hor, _ver), "
        "p AS (SELECT p1.*, r.heightRank, round(p1._elevation + p1._z, 3) AS sensorElevation FROM p1 "
        "JOIN r USING (_site, _hor, _ver)) "
        f"SELECT d.*, {added}, p.heightRank, p.sensorElevation FROM {_quote(t.reads[0])} AS d LEFT JOIN p "
        f"ON p._site = d.siteID AND p._hor = d.horizontalPosition AND p._ver = d.verticalPosition{during}"
    )


class Engine:
    """A dataset's relations in a DuckDB database of their own, locked down: file access off except
    for the dataset's Parquet files, configuration locked. Kept (eco_core.memo) while its
    dataset.json is unchanged, so a query pays only for a connection of its own (a cursor), not for
    starting an engine; memory and thread limits are the engine's, shared by its queries."""

    def __init__(self, ds: Dataset, limits: Limits) -> None:
        self.ds, self.limits = ds, limits
        self.con = _connect(ds, limits)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.con.cursor()


_engines = memos.by_value("tables.query_engines", max_entries=8)
_engines_lock = threading.Lock()


def _gone(key: Any) -> bool:
    try:
        st = (Path(key[0]) / dataset.DATASET_JSON).stat()
    except OSError:
        return True
    return (st.st_mtime_ns, st.st_size) != (key[1], key[2])


def forget(folder: Path) -> int:
    """Drop the kept engines of a dataset being deleted (or evicted), so none outlives its files; a
    query running on one keeps it until the query ends."""
    paths = {str(folder), str(folder.resolve())}

    def of_folder(key: Any) -> bool:
        return key[0] in paths

    with _engines_lock:
        return _engines.drop_where(of_folder)


def engine_for(folder: Path, limits: Limits) -> Engine:
    """The kept engine of the dataset in `folder` as its dataset.json is now, else a new one. Kept
    engines whose dataset is gone or rebuilt are dropped first: another process (the store's
    worker) may have evicted it."""
    try:
        st = (folder / dataset.DATASET_JSON).stat()
    except OSError:
        st = None
    key = (str(folder), st.st_mtime_ns if st else None, st.st_size if st else None, limits.memory_mb, limits.threads)
    with _engines_lock:
        _engines.drop_where(_gone)
        got: Engine | None = _engines.get(key)
        if got is None:
            got = Engine(Dataset.open(folder), limits)
            _engines.put(key, got)
        return got


def _connect(ds: Dataset, lim: Limits) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config={
        "threads": lim.threads, "memory_limit": f"{lim.memory_mb}MB", "temp_directory": "",
        "autoload_known_extensions": False, "autoinstall_known_extensions": False,
        "allow_community_extensions": False, "python_enable_replacements": False,
    })
    try:
        folder = ds.folder.resolve()
        files = []
        # Each view stands alone: one that cannot be made (a damaged file, a side table of a shape
        # no view reads) is left out of the dataset's relations, and every other still answers.
        for key, t in list(ds.tables.items()):
            if t.file is not None:
                path = folder / t.file
                if _made(con, _timestamp_view(t.name, path, t.timestamps), ds, key):
                    files.append(str(path))
        positions = ds.tables.get(names.SENSOR_POSITIONS)
        for key, t in list(ds.tables.items()):
            if t.layout == "positioned":
                if positions is None or any(r.lower() not in ds.tables for r in t.reads):
                    del ds.tables[key]
                else:
                    _made(con, _positioned_view(t, positions), ds, key)
        if VARIABLES in ds.tables:
            csv_path = str(folder / dataset.SIDE_FILES["variables"]).replace("'", "''")
            _made(con, f"CREATE TABLE {VARIABLES} AS SELECT * FROM read_csv('{csv_path}', header = true, "
                  "all_varchar = true, quote = '\"', escape = '\"')", ds, VARIABLES)
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        con.execute("SET allowed_paths = ?", [files])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _made(con: duckdb.DuckDBPyConnection, ddl: str, ds: Dataset, key: str) -> bool:
    """Runs one relation's DDL; on failure the relation is dropped from the dataset (logged)."""
    try:
        con.execute(ddl)
    except duckdb.Error as exc:
        log.warning("dataset %s: left out %s (%s)", ds.id, ds.tables[key].name, _engine_message(exc, ds.folder))
        del ds.tables[key]
        return False
    return True


class QueryRun:
    """One query on a connection of its own, run on a thread of its own so the event loop keeps
    serving; `cancel` interrupts it from any thread."""

    def __init__(self, folder: Path, sql: str, limit: int, limits: Limits) -> None:
        self.folder, self.sql, self.limit, self.limits = folder, sql, limit, limits
        self._con: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._cancelled = False
        self.thread: threading.Thread | None = None

    def start(self) -> concurrent.futures.Future[Result]:
        fut: concurrent.futures.Future[Result] = concurrent.futures.Future()

        def work() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(self.run())
            except BaseException as exc:  # handed to the caller, whatever it is
                fut.set_exception(exc)

        self.thread = threading.Thread(target=work, name="eco-query", daemon=True)
        self.thread.start()
        return fut

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._con is not None:
                self._con.interrupt()

    def _interrupt(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.interrupt()

    def run(self) -> Result:
        started = time.monotonic()
        engine = engine_for(self.folder, self.limits)
        ds = engine.ds
        con = engine.cursor()
        with self._lock:
            self._con = con
            if self._cancelled:
                con.interrupt()
        timer = threading.Timer(self.limits.timeout_s, self._interrupt)
        timer.daemon = True
        checked: Checked | None = None
        try:
            checked = check(ds, statements(con, self.sql, ds.folder), self.sql)
            if self._cancelled:  # cancelled before the query started: an interrupt would be lost
                raise concurrent.futures.CancelledError()
            timer.start()
            try:
                cur = con.execute(self.sql)
                rows = cur.fetchmany(self.limit + 1)
                description = cur.description or []
            finally:
                timer.cancel()
            more = len(rows) > self.limit
            total = None if more else len(rows)
            if more:
                total = self._count_rest(cur, len(rows), started)
            seconds = time.monotonic() - started
            columns = [Column(d[0], _type_name(d[1]), checked.units.get(d[0].lower())) for d in description]
            out = [[plain(v) for v in r] for r in rows[: self.limit]]
            return Result(columns, out, more, total, seconds, checked.tables, ds)
        except duckdb.Error as exc:
            raise engine_error(exc, self.sql, ds, checked, self.limits, self._cancelled) from None
        finally:
            with self._lock:
                self._con = None
            con.close()

    def _count_rest(self, cur: duckdb.DuckDBPyConnection, seen: int, started: float) -> int | None:
        """The result's row count when counting the rest is cheap: within COUNT_BUDGET_S (and the
        query's own time limit) and COUNT_MAX_ROWS rows; else None."""
        budget = min(COUNT_BUDGET_S, self.limits.timeout_s - (time.monotonic() - started))
        if budget <= 0:
            return None
        timer = threading.Timer(budget, self._interrupt)
        timer.daemon = True
        timer.start()
        n = seen
        try:
            reader = cur.to_arrow_reader(65536)
            for batch in reader or ():
                n += batch.num_rows
                if n > COUNT_MAX_ROWS:
                    return None
        except (duckdb.Error, OSError):  # interrupted at the budget (through Arrow's reader: OSError)
            return None
        finally:
            timer.cancel()
        return n
