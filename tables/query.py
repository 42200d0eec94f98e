"""Read-only SQL over one stacked dataset, in DuckDB, inside a sandbox.

    folder = dataset_folder(download_dir, dataset_id)     the one place an id becomes a folder
    run = QueryRun(Dataset.open(folder), sql, limit, Limits(...), budget=room)
    result = run.start().result()                         on a thread of its own; run.cancel() stops it

A serving process never runs this itself: tables.engine hands each query to an engine worker
process, which runs it here under operating-system limits; the serving process imports this module
only for the dataset's record and relations (DuckDB and the stacker load in the worker).

Each query gets a connection of its own (in memory, nothing shared between callers): every table
of the dataset becomes a view over its Parquet file, the variables file a small table, and each
sensor table a `<table>_positioned` view joined with sensor_positions. Then file access is
switched off except for exactly those Parquet files, the configuration is locked, and the caller's
SQL runs under a memory limit, a thread limit, a nesting bound (the parser's max_expression_depth)
and a wall-time limit (a timer interrupts it). Rows are fetched in batches and stop at the row
limit or the byte budget, whichever comes first.

Before it runs, the SQL is parsed by DuckDB itself: exactly one SELECT (or WITH, VALUES, FROM,
DESCRIBE, SUMMARIZE, SHOW TABLES) statement; every table it names must be one of the dataset's or a
CTE in scope where it is named; the engine's catalog (its tables, views and schemas, and CTEs
named like them) is refused however it is spelled; table functions other than range,
generate_series and unnest, and functions that read the configuration or the catalog (which
would show the server's paths or settings: every pg_catalog function among them), are refused.

Times are exposed as TIMESTAMP in UTC (the Parquet files hold UTC instants): DuckDB's calendar
functions on TIMESTAMP WITH TIME ZONE go through its time-zone library row by row, several times
slower for a monthly aggregate.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import decimal
import functools
import json
import logging
import math
import re
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eco_core.errors import EcoError
from eco_core.memo import memos
from tables import layout, names
from tables.layout import POSITIONED

if TYPE_CHECKING:
    # DuckDB (and the stacker, pyarrow) load in the engine workers that run queries (tables.engine),
    # never in a serving process, which reads only the dataset's record here.
    import duckdb

log = logging.getLogger("eco.tables")
# A dataset id as tables.dataset.dataset_id makes it: product.package.start.end.digest.
DATASET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
VARIABLES = "variables"
# Table functions a query may call: generators only (every reader of files is refused by name).
TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
# Functions that read the engine's configuration or catalog, which holds the dataset's paths and
# the views' definitions; with them every function of DuckDB's pg_catalog schema and every built-in
# macro that reads the catalog (catalog_functions, asked of the engine itself).
DENIED_FUNCTIONS = frozenset({"current_setting", "getvariable", "getenv", "current_schemas", "current_database",
                              "current_schema", "current_catalog", "current_query", "which_secret", "version",
                              "json_execute_serialized_sql", "query", "query_table", "sql_auto_complete"})
DENIED_PREFIXES = ("duckdb_", "pragma_", "read_", "parquet_", "sqlite_", "iceberg_", "delta_", "pg_")
# Names of the engine's catalog (views and schemas: duckdb_*, pg_*, sqlite_master, information_schema):
# never a relation a query reads, nor the name of one of its CTEs (a CTE of that name would let a
# reference outside its scope pass as the CTE while the engine reads the catalog).
CATALOG_PREFIXES = ("duckdb_", "pg_", "sqlite_", "pragma_", "information_schema")
SCHEMAS = frozenset({"", "main", "memory", "temp"})
# SHOW forms a query may use: SHOW TABLES lists the dataset's relations; the others show the engine.
SHOW_ALLOWED = frozenset({'"tables"', "tables"})
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
    return folder_in(download_dir / layout.FOLDER, dataset_id)


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
    return folder if (folder / layout.DATASET_JSON).is_file() else None


def dataset_ids(download_dir: Path) -> list[str]:
    """The ids of the datasets in the download directory (for suggestions)."""
    root = download_dir / layout.FOLDER
    try:
        return sorted(p.name for p in root.iterdir() if (p / layout.DATASET_JSON).is_file())
    except OSError:
        return []


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_mb: int  # DuckDB's memory_limit (tables.query_memory_mb)
    threads: int
    max_depth: int = 100  # the parser's nesting bound (tables.query_max_depth)
    engine_memory_mb: int | None = None  # the engine worker's own limit, when it runs in one


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
        from tables import dataset

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


# An absolute path of two or more parts, as an engine message may quote one (a file it read).
_PATH = re.compile(r"(?<![\w.)\]])/(?:[^\s/'\"]+/)+[^\s/'\"]*")


def _engine_message(exc: BaseException, folder: Path) -> str:
    """DuckDB's message without its quoted query lines, and never with a path of the server's."""
    text = str(exc).split("\n\nLINE ")[0].split("\nPossible solutions")[0].strip()
    text = text.replace(str(folder.resolve()), "<dataset>").replace(str(folder), "<dataset>")
    # DuckDB's advice to change a setting names the engine's settings, which callers cannot change.
    text = _SETTING_ADVICE.sub("", text).strip()
    return _PATH.sub("<path>", text)


_SETTING_ADVICE = re.compile(r"[^.\n]*\b(?:SET|RESET|PRAGMA) [a-z_]+[^.\n]*\.?", re.I)


def statements(con: duckdb.DuckDBPyConnection, sql: str, folder: Path, max_depth: int = 0) -> dict[str, Any]:
    """The one statement's syntax tree (DuckDB's JSON form); invalid_argument otherwise. The
    connection's parser bounds the nesting (max_expression_depth, tables.query_max_depth), so the
    tree read here is never deeper than that bound allows."""
    import duckdb

    try:
        found = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise _bad_sql(sql, exc, folder, max_depth) from None
    if len(found) != 1:
        raise EcoError("invalid_argument", f"sql: one statement only (found {len(found)}); send each query in its "
                       "own call", details={"field": "sql", "statements": len(found)})
    kind = found[0].type
    if kind != duckdb.StatementType.SELECT:
        raise EcoError("invalid_argument", f"sql: only a SELECT (or WITH ... SELECT) statement is run here, not "
                       f"{kind.name}: the tables are read-only and the engine's settings are fixed",
                       details={"field": "sql", "statementType": kind.name})
    row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    try:
        tree = json.loads(row[0]) if row else {}
    except RecursionError:  # not reached under the parser's bound; never an internal error if it is
        raise too_deep(max_depth) from None
    if tree.get("error"):
        pos = int(tree.get("position") or 0)
        message = str(tree.get("error_message") or "")
        if _DEPTH.search(message):
            raise too_deep(max_depth)
        raise EcoError("invalid_argument", f"sql: {message}",
                       details={"field": "sql", "position": pos, **_line_col(sql, pos)})
    if len(tree.get("statements") or []) != 1:
        raise EcoError("invalid_argument", "sql: one SELECT statement only", details={"field": "sql"})
    return tree["statements"][0]["node"]  # type: ignore[no-any-return]


_DEPTH = re.compile(r"[Mm]ax expression depth limit of (\d+) exceeded")


def too_deep(max_depth: int) -> EcoError:
    bound = f" ({max_depth})" if max_depth else ""
    return EcoError("invalid_argument", f"sql: nested deeper than tables.query_max_depth{bound}: expressions "
                    "within expressions and subqueries within subqueries count each level",
                    details={"field": "sql", "reason": "depth", "maxDepth": max_depth or None,
                             "setting": "tables.query_max_depth"},
                    hint="Write it flatter: a CTE (WITH) per step instead of nested subqueries, sum() or list "
                         "functions instead of long chains of operators.")


def _line_col(sql: str, pos: int) -> dict[str, int]:
    before = sql[:pos]
    return {"line": before.count("\n") + 1, "column": pos - (before.rfind("\n") + 1) + 1}


def _walk(node: Any) -> Any:
    """Every dict in the tree, parents first; iterative, so no depth of the tree can exhaust the stack."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            yield n
            stack.extend(reversed(list(n.values())))
        elif isinstance(n, list):
            stack.extend(reversed(n))


def _scoped(node: Any) -> Any:
    """Every dict in the tree with the CTE names in scope where it stands: a query node's CTEs are
    seen by its body and by the CTEs defined after them (and each by itself: WITH RECURSIVE), never
    outside the node. Iterative, as _walk."""
    stack: list[tuple[Any, frozenset[str]]] = [(node, frozenset())]
    while stack:
        n, scope = stack.pop()
        if isinstance(n, list):
            stack.extend((v, scope) for v in reversed(n))
            continue
        if not isinstance(n, dict):
            continue
        yield n, scope
        ctes = n.get("cte_map")
        entries = ctes.get("map") if isinstance(ctes, dict) else None
        if not entries:
            stack.extend((v, scope) for v in reversed(list(n.values())))
            continue
        names = [str(e.get("key") or "").lower() for e in entries if isinstance(e, dict)]
        inner = scope | frozenset(names)
        for k, v in reversed(list(n.items())):
            if k != "cte_map":
                stack.append((v, inner))
        for i, e in reversed(list(enumerate(entries))):
            if isinstance(e, dict):
                stack.append((e.get("value"), scope | frozenset(names[: i + 1])))


def catalog_name(name: str) -> bool:
    low = name.lower()
    return low.startswith(CATALOG_PREFIXES) or low in catalog_names()


@functools.cache
def catalog_names() -> frozenset[str]:
    """The engine's own catalog relations and schemas (asked of a bare engine once per process):
    what a name must never reach whatever it is spelled like."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        # information_schema's views are reached only through their schema (refused by its name).
        rows = con.execute("SELECT lower(view_name) FROM duckdb_views() WHERE schema_name <> 'information_schema' "
                           "UNION SELECT lower(schema_name) FROM duckdb_schemas() UNION SELECT lower(table_name) FROM "
                           "duckdb_tables()").fetchall()
    return frozenset(r[0] for r in rows) - {"main"}


@functools.cache
def catalog_functions() -> frozenset[str]:
    """Functions a query may not call: the fixed list, DuckDB's pg_catalog functions and the
    built-in macros whose definition reads the catalog or the settings."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        rows = con.execute(
            "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE schema_name <> 'main' OR "
            "(function_type IN ('macro', 'table_macro') AND regexp_matches(lower(coalesce(macro_definition, '')), "
            "'duckdb_|pg_|sqlite_|information_schema|current_setting|getvariable|pragma'))").fetchall()
    return DENIED_FUNCTIONS | frozenset(r[0] for r in rows)


def suggest(word: str, choices: list[str], n: int = 5) -> list[str]:
    from rapidfuzz import fuzz, process

    got = process.extract(word, choices, scorer=fuzz.WRatio, limit=n)
    return [c for c, score, _ in got if score >= 50] or choices[:n]


def _refuse_catalog(ds: Dataset, sql: str, d: dict[str, Any], name: str) -> EcoError:
    return EcoError("invalid_argument", f"sql: {name} is the engine's catalog or configuration, not part of the "
                    f"dataset: a query reads only the dataset's tables ({', '.join(ds.names())})",
                    details={"field": "sql", **_position(sql, d), "didYouMean": ds.names()[:10]})


def check(ds: Dataset, node: dict[str, Any], sql: str) -> Checked:
    """Refuses what the sandbox does not run (on the parsed statement, before anything runs) and
    finds the relations the query reads and the units of its bare columns. A relation is one of
    the dataset's or a CTE in scope where it is named; the engine's catalog (tables, views,
    schemas, functions) is refused however it is spelled, CTE names included."""
    read: dict[str, Table] = {}
    denied = catalog_functions()
    for d, scope in _scoped(node):
        typ = d.get("type")
        ctes = d.get("cte_map")
        for e in (ctes.get("map") or []) if isinstance(ctes, dict) else []:
            key = str(e.get("key") or "") if isinstance(e, dict) else ""
            if catalog_name(key):
                raise _refuse_catalog(ds, sql, d, key)
        if typ == "BASE_TABLE":
            name = str(d.get("table_name") or "")
            schema = str(d.get("schema_name") or "").lower()
            catalog = str(d.get("catalog_name") or "").lower()
            t = ds.tables.get(name.lower())
            if schema in SCHEMAS and catalog in SCHEMAS and (t is not None or (not schema and name.lower() in scope)):
                if t is not None:
                    read[t.name] = t
                continue
            shown = ".".join(x for x in (catalog, schema, name) if x)
            if catalog_name(name) or catalog_name(schema) or catalog_name(catalog):
                raise _refuse_catalog(ds, sql, d, shown)
            where = _position(sql, d)
            raise EcoError("not_found", f"sql: no table {shown!r} in dataset {ds.id}; its tables are "
                           f"{', '.join(ds.names())}", details={"field": "sql", **where,
                                                                 "didYouMean": suggest(name, ds.names())})
        if typ == "SHOW_REF" and d.get("query") is None and str(d.get("table_name") or "").lower() not in SHOW_ALLOWED:
            raise _refuse_catalog(ds, sql, d, "SHOW (other than SHOW TABLES)")
        if typ == "TABLE_FUNCTION":
            fn = str((d.get("function") or {}).get("function_name") or "").lower()
            if fn not in TABLE_FUNCTIONS:
                raise EcoError("invalid_argument", f"sql: table function {fn}() is not available here: a query "
                               f"reads the dataset's tables by name ({', '.join(ds.names())}); of table functions "
                               f"only {', '.join(sorted(TABLE_FUNCTIONS))} run",
                               details={"field": "sql", **_position(sql, d), "didYouMean": ds.names()[:10]})
        fn_name = d.get("function_name")
        if isinstance(fn_name, str):
            low = fn_name.lower()
            if low in denied or low.startswith(DENIED_PREFIXES):
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


def _bad_sql(sql: str, exc: BaseException, folder: Path, max_depth: int = 0) -> EcoError:
    if _DEPTH.search(str(exc)):
        return too_deep(max_depth)
    return EcoError("invalid_argument", f"sql: {_engine_message(exc, folder)}",
                    details={"field": "sql", **_where(sql, str(exc))})


def memory_error(limits: Limits, *, engine: bool) -> EcoError:
    """query_too_large naming the memory limit that stopped the query: DuckDB's own (its buffer
    manager) or the engine worker's (the operating system's, tables.engine_memory_mb)."""
    if engine and limits.engine_memory_mb:
        mb, setting = limits.engine_memory_mb, "tables.engine_memory_mb"
    else:
        mb, setting = limits.memory_mb, "tables.query_memory_mb"
    return EcoError("query_too_large", f"sql: the query needs more than {mb} MB of memory and was stopped "
                    f"({setting})", details={"field": "sql", "reason": "memory", "limitMb": mb, "setting": setting},
                    hint="Narrow it: join on keys rather than every pair of rows, filter first, aggregate, or "
                         "select shorter values.")


_MISSING_COLUMN = re.compile(r'Referenced column "([^"]+)" not found')
_CANDIDATES = re.compile(r'Candidate bindings: (.*)')


def engine_error(exc: duckdb.Error, sql: str, ds: Dataset, checked: Checked | None, limits: Limits,
                 cancelled: bool) -> EcoError:
    """DuckDB's error as the tool's: the field, the engine's message, the position."""
    import duckdb

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
        # "bad allocation": the operating system refused memory (the worker's limit), not DuckDB's.
        return memory_error(limits, engine="bad allocation" in str(exc) or "bad_alloc" in str(exc))
    if _DEPTH.search(msg):
        return too_deep(limits.max_depth)
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
    by_bytes: bool = False  # the rows stop at the byte budget
    cut: list[str] = field(default_factory=list)  # columns whose value was cut to fit the budget


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
        st = (Path(key[0]) / layout.DATASET_JSON).stat()
    except OSError:
        return True
    return (st.st_mtime_ns, st.st_size) != (key[1], key[2])


def forget(folder: Path) -> int:
    """Drop this process's kept engines of a dataset being deleted (or evicted), so none outlives
    its files; a query running on one keeps it until the query ends. (The engine workers' own are
    let go by tables.engine.forget: the store calls both.)"""
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
        st = (folder / layout.DATASET_JSON).stat()
    except OSError:
        st = None
    key = (str(folder), st.st_mtime_ns if st else None, st.st_size if st else None, limits.memory_mb, limits.threads,
           limits.max_depth)
    with _engines_lock:
        _engines.drop_where(_gone)
        got: Engine | None = _engines.get(key)
        if got is None:
            got = Engine(Dataset.open(folder), limits)
            _engines.put(key, got)
        return got


def _connect(ds: Dataset, lim: Limits) -> duckdb.DuckDBPyConnection:
    import duckdb

    from tables import dataset

    con = duckdb.connect(":memory:", config={
        "threads": lim.threads, "memory_limit": f"{lim.memory_mb}MB", "temp_directory": "",
        "max_expression_depth": lim.max_depth,
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
    import duckdb

    try:
        con.execute(ddl)
    except duckdb.Error as exc:
        log.warning("dataset %s: left out %s (%s)", ds.id, ds.tables[key].name, _engine_message(exc, ds.folder))
        del ds.tables[key]
        return False
    return True


@dataclass
class _Page:
    rows: list[list[Any]]
    more: bool  # rows past these exist
    by_bytes: bool  # they stop at the byte budget (else at the row limit or the end)
    cut: list[str]  # columns whose value in the one row shown was cut to fit the budget
    used: int  # bytes of the rows


class QueryRun:
    """One query on a connection of its own, run on a thread of its own; `cancel` interrupts it
    from any thread. With a byte budget (the result's room for rows) the rows are fetched in
    batches and stop at the row limit or the budget, whichever comes first, so no more than fits
    is ever held; a first row alone over the budget has its longest text values cut to fit."""

    def __init__(self, folder: Path, sql: str, limit: int, limits: Limits, budget: int | None = None) -> None:
        self.folder, self.sql, self.limit, self.limits, self.budget = folder, sql, limit, limits, budget
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
        import duckdb

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
            checked = check(ds, statements(con, self.sql, ds.folder, self.limits.max_depth), self.sql)
            if self._cancelled:  # cancelled before the query started: an interrupt would be lost
                raise concurrent.futures.CancelledError()
            timer.start()
            try:
                cur = con.execute(self.sql)
                description = cur.description or []
                columns = [Column(d[0], _type_name(d[1]), checked.units.get(d[0].lower())) for d in description]
                page = self._fetch(cur, columns)
            finally:
                timer.cancel()
            total = None if page.more else len(page.rows)
            if page.more and not page.by_bytes:
                total = self._count_rest(cur, len(page.rows) + 1, started, page.used / max(1, len(page.rows)))
            seconds = time.monotonic() - started
            return Result(columns, page.rows, page.more, total, seconds, checked.tables, ds, page.by_bytes, page.cut)
        except duckdb.Error as exc:
            raise engine_error(exc, self.sql, ds, checked, self.limits, self._cancelled) from None
        except RecursionError:  # a tree the parser's bound let through, read deeper than Python goes
            raise too_deep(self.limits.max_depth) from None
        finally:
            with self._lock:
                self._con = None
            con.close()

    def _fetch(self, cur: duckdb.DuckDBPyConnection, columns: list[Column]) -> _Page:
        """The rows up to the limit and the budget, fetched in growing batches (the first small,
        so a query of huge values holds few of them); one row past the limit tells of more."""
        room = None if self.budget is None else self.budget - row_bytes([c.__dict__ for c in columns])
        rows: list[list[Any]] = []
        used, batch = 0, FIRST_BATCH
        while True:
            got = cur.fetchmany(min(batch, self.limit + 1 - len(rows)))
            if not got:
                return _Page(rows, False, False, [], used)
            for n, r in enumerate(got):
                if len(rows) == self.limit:
                    return _Page(rows, True, False, [], used)
                row = [plain(v) for v in r]
                size = row_bytes(row) + 1
                if room is not None and used + size > room:
                    if rows:
                        return _Page(rows, True, True, [], used)
                    row, cut = cut_row(row, room, [c.name for c in columns])
                    more = n + 1 < len(got) or bool(cur.fetchmany(1))
                    return _Page([row], more, True, cut, row_bytes(row) + 1)
                used += size
                rows.append(row)
            batch = min(batch * 4, MAX_BATCH)

    def _count_rest(self, cur: duckdb.DuckDBPyConnection, seen: int, started: float, row_size: float) -> int | None:
        """The result's row count when counting the rest is cheap: within COUNT_BUDGET_S (and the
        query's own time limit) and COUNT_MAX_ROWS rows; else None. Batches of about
        COUNT_BATCH_BYTES by the rows seen so far."""
        import duckdb

        budget = min(COUNT_BUDGET_S, self.limits.timeout_s - (time.monotonic() - started))
        if budget <= 0:
            return None
        timer = threading.Timer(budget, self._interrupt)
        timer.daemon = True
        timer.start()
        n = seen
        try:
            reader = cur.to_arrow_reader(int(max(1024, min(65536, COUNT_BATCH_BYTES / max(1.0, row_size)))))
            for batch in reader or ():
                n += batch.num_rows
                if n > COUNT_MAX_ROWS:
                    return None
        except (duckdb.Error, OSError, MemoryError):  # interrupted at the budget (Arrow's reader: OSError)
            return None
        finally:
            timer.cancel()
        return n


# Rows fetched at first, then four times as many each batch up to MAX_BATCH.
FIRST_BATCH = 64
MAX_BATCH = 4096
COUNT_BATCH_BYTES = 8 << 20
# What ends a cut value, and the fewest characters a cut leaves.
CUT_MARK = "\u2026"
CUT_MIN = 16


def row_bytes(value: Any) -> int:
    """Bytes of `value` in the compact JSON the result budget measures (mcp_gateway.budget)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def cut_row(row: list[Any], room: int, names: list[str]) -> tuple[list[Any], list[str]]:
    """`row` with its longest text values cut (ending in CUT_MARK) until it fits `room` bytes, and
    the columns cut; result_too_large naming the budget when cutting text cannot make it fit."""
    out, cut = list(row), list[int]()
    while (over := row_bytes(out) + 1 - room) > 0:
        texts = [(len(v), i) for i, v in enumerate(out) if isinstance(v, str) and i not in cut]
        if not texts:
            raise EcoError("result_too_large", f"sql: one row of this result is {row_bytes(row)} bytes, more than "
                           f"the result budget (limits.max_result_bytes) leaves for rows ({max(room, 0)} bytes), and "
                           "its values are not text that can be cut", details={"field": "sql", "rowBytes":
                                                                               row_bytes(row), "roomBytes": room},
                           hint="Select fewer columns or shorter values (e.g. left(x, 1000), len(list)).")
        length, i = max(texts)
        # Each character takes at least one byte: dropping `over` of them frees at least `over` bytes.
        keep = max(CUT_MIN, length - over - 4)
        out[i] = out[i][:keep] + CUT_MARK
        cut.append(i)
    return out, [names[i] for i in cut]
