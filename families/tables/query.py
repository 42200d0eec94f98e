"""eco_query_tables: read-only SQL over one stacked dataset.

The SQL runs in tables/query.py's sandboxed DuckDB engine, in an engine worker process
(tables/engine.py). The dataset id is eco_stack_tables' answer; tables.query.dataset_folder is the
one place it becomes a folder (query_folder here, for both transports). Units come from the
variables file (through the dataset's record) for bare columns only; citations are those of the
releases the query's tables were stacked from.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog.access import catalog_read
from catalog.releases import bare_doi, doi_link
from catalog.resolve import PROVISIONAL
from eco_core.errors import EcoError
from eco_core.paging import RowCap
from eco_core.wire import Envelope, NextStep, Source, ToolInput, WireModel
from families.call import CallContext
from families.tables.common import ident
from tables import layout, names

if TYPE_CHECKING:
    # The engines load with the tool that runs them, not with every worker (pyarrow, DuckDB).
    from tables import query


class QueryTablesInput(ToolInput):
    dataset_id: str = Field(min_length=1, max_length=200, description="datasetId from eco_stack_tables.")
    sql: str = Field(min_length=1, max_length=20000, description=(
        "One read-only DuckDB SELECT or WITH; tables by NEON name; in <table>_positioned heightRank 1 is "
        "the tower top or shallowest sensor. Times UTC."))
    limit: RowCap = Field(100, ge=1, le=5000)


class QueryColumn(WireModel):
    name: str
    type: str
    units: str | None = Field(description="Derived from the SQL.")
    units_reason: str | None = Field(None, description="Why units is null.")


class QueryCitation(WireModel):
    release: str
    doi: str | None
    doi_url: str | None = None
    text: str | None
    tables: list[str]


class QueryTablesOutput(Envelope):
    dataset_id: str
    product_code: str
    columns: list[QueryColumn]
    rows: list[list[Any]] = Field(description="Values in the order of columns.")
    returned: int
    total_rows: int | None = Field(description="null: not counted.")
    truncated: bool
    truncated_by: Literal["limit", "bytes"] | None
    seconds: float = Field(description="Time the query took.")
    tables_read: list[str]
    citations: list[QueryCitation]


# Column types eco_plot_tables can put on a y axis: a result with one is offered as a chart.
CHART_NUMBERS = ("double", "int64", "int32", "int16", "int8", "int128", "uint64")
# Bytes kept free under the result budget for the envelope's notes and next steps.
QUERY_ENVELOPE_RESERVE = 2048


def query_limits(call: CallContext) -> query.Limits:
    """The query's wall time: tables.query_timeout_s, within what is left of the call's deadline
    (waiting for a free engine worker included)."""
    from tables import query

    t = call.cfg.tables
    timeout = t.query_timeout_s
    remaining = call.accounting.remaining() if call.accounting is not None else None
    if remaining is not None:
        timeout = max(0.1, min(timeout, remaining - 0.5))
    return query.Limits(timeout_s=timeout, memory_mb=t.query_memory_mb, threads=t.query_threads,
                        max_depth=t.query_max_depth, engine_memory_mb=t.engine_memory_mb)


def compact_size(payload: Any) -> int:
    """Bytes of the compact JSON the result budget measures (mcp_gateway.budget)."""
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def _fit_rows(rows: list[list[Any]], room: int) -> int:
    used = 0
    for n, row in enumerate(rows):
        used += compact_size(row) + 1
        if used > room:
            return n
    return len(rows)


# The envelope beside the rows (everything but the rows and the columns), as the engine worker
# is told to leave room for: the rows stop there, so no more than fits ever reaches this process.
QUERY_ENVELOPE_ESTIMATE = 3072
# Our own paging step: the caller's query wrapped, and the rows from an offset.
_PAGED = re.compile(r"\ASELECT \* FROM \((?P<inner>.*)\) AS q OFFSET (?P<offset>\d+)\Z", re.S)


def query_citations(result: query.Result) -> list[QueryCitation]:
    by_release: dict[str, list[str]] = {}
    for t in result.tables:
        for rel in sorted(t.releases):
            by_release.setdefault(rel, []).append(t.name)
    known = {c.get("release"): c for c in result.dataset.record.get("citations") or []}
    return [_citation_of(known, rel, tabs) for rel, tabs in sorted(by_release.items())]


def _citation_of(known: dict[Any, dict[str, Any]], release: str, tables: list[str]) -> QueryCitation:
    c = known.get(release) or {}
    return QueryCitation(release=release, doi=bare_doi(c.get("doi")), doi_url=doi_link(c.get("doi")),
                         text=c.get("text"), tables=tables)


async def _rows_read(result: query.Result, run: Callable[[str], concurrent.futures.Future[query.Result]]
                     ) -> tuple[list[QueryCitation], list[str]]:
    """The citations of the releases of the rows the query read, and the quality-flag note: from
    a follow-up of the query's FROM and WHERE (planned by tables.lineage in the engine worker) run
    through the same sandboxed engine; every table's releases, said so, where the query's shape
    does not tell."""
    from tables import lineage

    if not result.tables:
        return [], []
    follow = lineage.FollowUp.from_json(result.follow_up, result.dataset)
    notes: list[str] = []
    got: lineage.Lineage | None = None
    # A table of one release needs no follow-up for its citation: every row read is of it.
    single = follow.table is not None and len(follow.table.releases) <= 1
    if follow.sql is not None and (follow.flags or not single):
        try:
            done = await asyncio.wrap_future(run(follow.sql))
        except EcoError as exc:
            notes.append(f"Which releases the rows came from could not be read ({exc.code}): cited every release of "
                         "the tables read.")
        else:
            got = follow.read(done.rows[0]) if done.rows else None
    if got is not None and got.flagged:
        flags = " or ".join(follow.flags)
        notes.append(f"{got.flagged} of the {got.rows} rows read have {flags} set (they failed NEON's quality "
                     f"assessment) and are in the aggregates of {', '.join(follow.fields)}: add WHERE "
                     f"{' AND '.join(f'{f} = 0' for f in follow.flags)} to leave them out.")
    if got is not None and got.releases is not None and follow.table is not None:
        if not got.rows:
            notes.append("The query read no rows: there is nothing to cite.")
        known = {c.get("release"): c for c in result.dataset.record.get("citations") or []}
        return [_citation_of(known, rel, [follow.table.name]) for rel in sorted(got.releases)], notes
    cites = query_citations(result)
    if follow.undecidable:
        notes.append(f"Which rows fed the answer is not decidable for a query with {follow.undecidable}: cited every "
                     f"release of the tables read ({', '.join(c.release for c in cites)}).")
    return cites, notes


def query_steps(args: QueryTablesInput, product: str, sites: list[str], cites: list[QueryCitation], returned: int,
                 truncated: bool) -> list[NextStep]:
    steps: list[NextStep] = []
    if truncated:
        inner = args.sql.strip().rstrip(";").strip()
        offset = returned
        paged = _PAGED.match(inner)
        if paged:  # a page of a page: the same query from further on, never the same rows again
            inner, offset = paged.group("inner"), int(paged.group("offset")) + returned
        steps.append(NextStep(tool="eco_query_tables", arguments={
            "dataset_id": args.dataset_id, "sql": f"SELECT * FROM ({inner}) AS q OFFSET {offset}",
            "limit": args.limit}, why=("The rows after these (add ORDER BY for a stable order); narrower: a WHERE on "
                                       "siteID, a time range or a position, or GROUP BY to aggregate.")))
    for c in cites:
        cite: dict[str, Any] = {"product": product, "format": "bibtex"}
        if c.release == PROVISIONAL:
            cite["provisional"] = True
        else:
            cite["release"] = c.release
        if sites:
            cite["site_codes"] = sites
        steps.append(NextStep(tool="eco_get_citation", arguments=cite,
                              why=f"BibTeX for the {c.release} data these rows come from."))
    return steps


def _own_identity(call: CallContext) -> str | None:
    """The one-way hash of the caller's own token (sent with the call), or None: a caller without
    one shares "anonymous" with every other, so it is shown no dataset ids."""
    acct = call.accounting
    if call.token_source != "request" or acct is None or not acct.token:
        return None
    return acct.identity


def _ready_ids_of(identity: str, limit: int = 200) -> list[str]:
    """The ready datasets first asked for with this token, most recently used first."""
    from tables.models import READY, Dataset

    return list(Dataset.objects.filter(state=READY, requested_by=identity).order_by("-last_used_at").values_list(
        "dataset_id", flat=True)[:limit])


async def query_folder(call: CallContext, dataset_id: str) -> Path:
    """Where eco_query_tables finds a dataset, as eco_stack_tables put it on this transport: over
    HTTP a ready dataset of the server's store (its last use touched, so eviction spares it while
    it is read), on stdio the download directory's datasets. not_found with the known ids."""
    from tables import query

    cfg = call.cfg
    if call.transport == "http":
        from tables import store

        folder = await catalog_read(store.ready_folder, dataset_id, cfg)
        identity = _own_identity(call)
        known = [] if folder is not None or identity is None else await catalog_read(_ready_ids_of, identity)
        where = "in this server's dataset store (eco_stack_tables builds it; wait until its state is ready)"
        if identity is None:
            where += "; suggestions list only datasets a caller's own token asked for"
    else:
        folder = query.dataset_folder(cfg.download_dir, dataset_id)
        known = [] if folder is not None else await asyncio.to_thread(query.dataset_ids, cfg.download_dir)
        where = "in the download directory (eco_stack_tables answers the id of the dataset it stacks)"
    if folder is None:
        raise EcoError("not_found", f"dataset_id: no dataset {dataset_id!r} {where}",
                       details={"field": "dataset_id", "didYouMean": query.suggest(dataset_id, known)
                                if known else []})
    return folder


async def query_tables(args: QueryTablesInput, call: CallContext) -> QueryTablesOutput:
    from tables import engine, query
    cfg = call.cfg
    tcfg = cfg.tables
    folder = await query_folder(call, args.dataset_id)
    budget = cfg.limits.max_result_bytes - QUERY_ENVELOPE_RESERVE - QUERY_ENVELOPE_ESTIMATE
    cancel = threading.Event()
    future = engine.start(folder, args.sql, args.limit, query_limits(call), budget=budget, cpu_s=tcfg.query_cpu_s,
                          settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb),
                          cancel=cancel)
    try:
        result = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        cancel.set()  # the caller went away: the engine worker stops the query too
        raise
    record = result.dataset.record
    sel = record.get("selection") or {}
    sites = list(sel.get("siteCodes") or [])
    try:
        cites, read_notes = await _rows_read(result, lambda sql: engine.start(
            folder, sql, 1, query_limits(call), budget=None, cpu_s=tcfg.query_cpu_s,
            settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb), cancel=cancel))
    except asyncio.CancelledError:
        cancel.set()
        raise
    out = QueryTablesOutput(
        dataset_id=result.dataset.id, product_code=record.get("product", ""),
        columns=[QueryColumn(name=c.name, type=c.type, units=c.units, units_reason=c.units_reason)
                 for c in result.columns], rows=[],
        returned=0, total_rows=result.total, truncated=False, truncated_by=None, seconds=round(result.seconds, 4),
        tables_read=[t.name for t in result.tables], citations=cites,
        source=Source(origin="local", endpoints=[]))
    room = cfg.limits.max_result_bytes - compact_size(out.model_dump(by_alias=True, mode="json")) - QUERY_ENVELOPE_RESERVE
    keep = _fit_rows(result.rows, room)
    rows = result.rows[:keep]
    cut = list(result.cut)
    if keep == 0 and result.rows:  # never an empty page while rows exist: the first, cut to fit
        first, cut = query.cut_row(result.rows[0], room, [c.name for c in result.columns])
        rows, keep = [first], 1
    notes: list[str] = []
    by: Literal["limit", "bytes"] | None = None
    more = result.more or keep < len(result.rows)
    if cut:
        by = "bytes"
        notes.append(f"The value of {', '.join(cut)} in row {keep} was cut (it ends in \u2026) to fit the result "
                     f"budget of {cfg.limits.max_result_bytes} bytes (limits.max_result_bytes); select part of it "
                     "(substr, left) to read the rest.")
    elif keep < len(result.rows) or result.by_bytes:
        by = "bytes"
        notes.append(f"Showing {keep} rows: the next would pass the result budget of {cfg.limits.max_result_bytes} "
                     "bytes (limits.max_result_bytes); select fewer columns or aggregate.")
    elif result.more:
        by = "limit"
        notes.append(f"Showing the first {keep} rows (limit {args.limit}) of "
                     + (f"{result.total}." if result.total is not None else "more (not counted)."))
    out.rows, out.returned = rows, len(rows)
    out.truncated, out.truncated_by = by is not None, by
    out.notes = notes + read_notes
    out.next_steps = query_steps(args, out.product_code, sites, cites, len(rows), by is not None and more)
    if len(out.columns) >= 2 and any(c.type in CHART_NUMBERS for c in out.columns):
        out.next_steps.append(NextStep(tool="eco_plot_tables", arguments={"dataset_id": args.dataset_id, "sql": args.sql},
                                       why="A chart of these rows (PNG and Vega-Lite), units on its axes."))
    return out


def query_next_step(record: dict[str, Any]) -> NextStep | None:
    """The eco_query_tables step a stacked dataset's answer can offer (eco_stack_tables' nextSteps):
    a monthly mean by site and position for a sensor table, the first rows of another."""
    tables = record.get("tables") or {}
    data = [t for n, t in tables.items() if n not in (names.SENSOR_POSITIONS, names.SCIENCE_REVIEW_FLAGS)]
    if not data:
        return None
    sensors = [t for t in data if t.get("layout") == "sensor"]
    # The positioned views exist only beside a sensor_positions table with positions to join.
    spos = {c["name"] for c in (tables.get(names.SENSOR_POSITIONS) or {}).get("columns") or []}
    positioned = {"siteID", "HOR.VER", "zOffset"} <= spos
    if sensors:
        sensor = min(sensors, key=lambda t: t.get("rows") or 0)  # the coarsest averaging interval
        mean = next((c["name"] for c in sensor["columns"] if c["name"].endswith("Mean") and c["type"] == "double"), None)
        if mean and any(c["name"] == "startDateTime" for c in sensor["columns"]) and positioned:
            # One row per position period: a sensor that moved within a month gives a row for each
            # of its heights, never one height for the month.
            passed, said = _passed(sensor)
            sql = (f"SELECT siteID, verticalPosition, zOffset, positionStartDateTime, date_trunc('month', startDateTime) "
                   f"AS month, avg({mean}) AS {mean}Monthly FROM {ident(sensor['name'] + layout.POSITIONED)}{passed} "
                   "GROUP BY siteID, verticalPosition, zOffset, positionStartDateTime, month ORDER BY ALL")
            return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"], "sql": sql},
                            why=f"Monthly means by site and sensor height (each period a sensor spent at a height)"
                                f"{said}, with the citation of the data.")
        if mean and any(c["name"] == "startDateTime" for c in sensor["columns"]):
            passed, said = _passed(sensor)
            sql = (f"SELECT siteID, horizontalPosition, verticalPosition, date_trunc('month', startDateTime) AS month, "
                   f"avg({mean}) AS {mean}Monthly FROM {ident(sensor['name'])}{passed} GROUP BY ALL ORDER BY ALL")
            return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"], "sql": sql},
                            why=f"Monthly means by site and sensor position (no sensor_positions table to give "
                                f"heights){said}, with the citation of the data.")
    first = data[0]
    passed, said = _passed(first)
    return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"],
                                                        "sql": f"SELECT * FROM {ident(first['name'])}{passed} LIMIT 10"},
                    why=f"Ask the stacked tables in SQL (one SELECT){said}, with the citation of the data.")


def _passed(table: dict[str, Any]) -> tuple[str, str]:
    """The WHERE that leaves out rows NEON's quality assessment failed, and the words that say so:
    every query the service suggests keeps only rows whose final quality flags are 0."""
    from tables import quality

    cond = quality.passed(c["name"] for c in table.get("columns") or [])
    if cond is None:
        return "", ""
    return f" WHERE {cond}", f", flagged rows left out ({cond}: NEON's quality assessment passed)"
