"""eco_plot_tables: a chart of one read-only query over a stacked dataset.

The query runs as eco_query_tables runs it (tables.engine: an engine worker process, the same
sandbox and limits), first for at most POINT_BUDGET rows, which give the columns, their types and
units. A longer result is reduced in SQL around the caller's query, through the same path: a time
series averaged into time buckets (per group), a scatter sampled (reservoir, repeatable), bars cut
to the first BAR_BUDGET; a note says how. The chart is a Vega-Lite specification with its data
inline (the structured content) and its PNG rendered from that specification (tables.charts),
sent as an MCP image content beside the JSON.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr

from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput, WireModel
from families.call import CallContext
from families.tables.common import ident
from families.tables.query import (
    QueryCitation,
    QueryTablesInput,
    compact_size,
    query_citations,
    query_folder,
    query_limits,
    query_steps,
)

if TYPE_CHECKING:
    # The engines load with the tool that runs them, not with every worker (pyarrow, DuckDB).
    from tables import query

# Points a line or scatter shows at most: legible at 640 px, and about 75 KB of data in the spec.
POINT_BUDGET = 1500
# Bars at most: past this a bar chart is no longer read bar by bar.
BAR_BUDGET = 100
# Distinct colour groups at most (one legend entry each).
MAX_GROUPS = 12
# Bytes of the answer kept for everything but the chart's data (envelope, spec, notes).
SPEC_RESERVE = 12_000
# Time bucket widths, in seconds and as a DuckDB interval: the narrowest that keeps each group's
# line within its share of POINT_BUDGET.
BUCKETS = [(60, "1 minute"), (300, "5 minutes"), (600, "10 minutes"), (900, "15 minutes"), (1800, "30 minutes"),
           (3600, "1 hour"), (7200, "2 hours"), (10800, "3 hours"), (21600, "6 hours"), (43200, "12 hours"),
           (86400, "1 day"), (172800, "2 days"), (604800, "7 days"), (1209600, "14 days"), (2629746, "1 month"),
           (7889238, "3 months"), (31556952, "1 year"), (315569520, "10 years")]

ChartKind = Literal["auto", "line", "bar", "scatter"]
Kind = Literal["line", "bar", "scatter"]
Reduced = Literal["none", "time_buckets", "sample", "first_rows", "thinned"]


class PlotTablesInput(ToolInput):
    dataset_id: str = Field(min_length=1, max_length=200, description="datasetId from eco_stack_tables.")
    sql: str = Field(min_length=1, max_length=20000, description=(
        "One read-only DuckDB SELECT or WITH, as for eco_query_tables; its columns are what x, y and color name."))
    chart: ChartKind = Field("auto", description=(
        "line (over time), bar (by group), scatter; auto: a line when x is a time, bars when x is text, else scatter."))
    x: str | None = Field(None, max_length=200, description="Column for x. Default: a time column, else the first.")
    y: str | None = Field(None, max_length=200, description="Numeric column for y. Default: the last other numeric one.")
    color: str | None = Field(None, max_length=200, description=(
        "Column giving one colour per group. Default: the other text columns together, when they make at most 12 groups."))
    title: str | None = Field(None, max_length=200)


class PlotAxis(WireModel):
    column: str
    type: str
    units: str | None
    title: str = Field(description="As on the chart: units in brackets, times (UTC).")


class PlotImage(WireModel):
    mime_type: str
    width: int
    height: int
    bytes: int


class PlotTablesOutput(Envelope):
    dataset_id: str
    product_code: str
    chart: Literal["line", "bar", "scatter"]
    x: PlotAxis
    y: PlotAxis
    color: list[str] = Field(description="Columns whose values make the colour groups.")
    groups: int
    points: int = Field(description="Points (or bars) drawn.")
    query_rows: int | None = Field(description="Rows the query gave; null: not counted.")
    reduced: Reduced = Field(description="How a long result was brought to the point budget (notes say more).")
    bucket: str | None = Field(description="Time bucket width when averaged into time buckets.")
    image: PlotImage = Field(description="The PNG sent as the image content of this answer.")
    vega_lite: dict[str, Any] = Field(description="Vega-Lite specification of the chart with its data (the PNG's source).")
    tables_read: list[str]
    citations: list[QueryCitation]
    seconds: float = Field(description="Time the queries and the rendering took.")

    _png: bytes = PrivateAttr(default=b"")

    @property
    def png(self) -> bytes:
        """The rendered chart, sent as an MCP image content (mcp_gateway.calls) and not in the JSON."""
        return self._png


async def _plot_query(call: CallContext, folder: Path, sql: str, limit: int) -> query.Result:
    """One query, run as eco_query_tables runs it (families.tables.query.query_tables): in an engine
    worker process under the same limits, its rows within the chart's share of the hard result
    budget (the chart's data is the answer's bulk)."""
    from tables import engine

    tcfg = call.cfg.tables
    cancel = threading.Event()
    future = engine.start(folder, sql, limit, query_limits(call),
                          budget=call.cfg.limits.hard_max_result_bytes - SPEC_RESERVE, cpu_s=tcfg.query_cpu_s,
                          settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb),
                          cancel=cancel)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        cancel.set()  # the caller went away: the engine worker stops the query too
        raise


def _column(name: str, columns: list[query.Column], field: str) -> query.Column:
    for c in columns:
        if c.name == name:
            return c
    folded = [c for c in columns if c.name.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    from tables.query import suggest

    names = [c.name for c in columns]
    raise EcoError("invalid_argument", f"{field}: the query has no column {name!r} (it has {', '.join(names)})",
                   details={"field": field, "didYouMean": suggest(name, names) or names[:10]},
                   hint=f"Name one of the query's columns in {field}, or leave it out for the default.")


def _pick(args: PlotTablesInput, columns: list[query.Column], rows: list[list[Any]]
          ) -> tuple[Kind, query.Column, query.Column, list[query.Column], list[str]]:
    """The chart's kind, x, y and colour columns; notes on what was chosen."""
    from tables.charts import NUMERIC, TEMPORAL

    notes: list[str] = []
    if len(columns) < 2 and (args.x is None or args.y is None):
        raise EcoError("invalid_argument", "sql: a chart needs at least two columns (x and y)",
                       details={"field": "sql"}, hint="Select an x column (a time, a group) and a numeric y column.")
    if args.x is not None:
        x = _column(args.x, columns, "x")
    else:
        # The time column with the most distinct values (a period's start repeats; the month
        # varies), the later of equals; else the first column.
        times = [(len({r[i] for r in rows}), i) for i, c in enumerate(columns) if c.type in TEMPORAL]
        x = columns[max(times)[1]] if times else columns[0]
    color_given = _column(args.color, columns, "color") if args.color is not None else None
    if args.y is not None:
        y = _column(args.y, columns, "y")
        if y.type not in NUMERIC:
            raise EcoError("invalid_argument", f"y: column {y.name!r} is {y.type}, not a number",
                           details={"field": "y", "type": y.type},
                           hint="Name a numeric column for y (or cast it in the SQL).")
    else:
        # The last numeric column: a query names its measure (an aggregate) after its keys.
        y_found = next((c for c in reversed(columns) if c.type in NUMERIC and c is not x and c is not color_given), None)
        if y_found is None:
            raise EcoError("invalid_argument", "y: the query has no numeric column besides x to plot",
                           details={"field": "y", "columns": [c.name for c in columns]},
                           hint="Select a numeric column (an average, a count, a measurement).")
        y = y_found
    kind: Kind
    if args.chart != "auto":
        kind = args.chart
    elif x.type in TEMPORAL:
        kind = "line"
    elif x.type in NUMERIC:
        kind = "scatter"
    else:
        kind = "bar"
    if color_given is not None:
        groups = [color_given]
    else:
        # Text columns besides x and y are the groups a reader tells apart (site, position).
        candidates = [c for c in columns if c is not x and c is not y and c.type == "string"]
        at = [columns.index(c) for c in candidates]
        distinct = {tuple(r[i] for i in at) for r in rows}
        if candidates and len(distinct) <= MAX_GROUPS:
            groups = candidates
        else:
            groups = []
            if candidates:
                notes.append(f"Not coloured by {', '.join(c.name for c in candidates)}: {len(distinct)} groups or more "
                             f"(at most {MAX_GROUPS}); name a column in color, or filter in the SQL.")
    return kind, x, y, groups, notes


def _group_value(values: list[Any]) -> str:
    return " / ".join("null" if v is None else str(v) for v in values)


def _bucket_for(seconds: float, per_group: int) -> tuple[int, str]:
    need = seconds / max(1, per_group - 1)
    return next(((s, w) for s, w in BUCKETS if s >= need), BUCKETS[-1])


def _seconds(v: Any) -> float:
    if isinstance(v, datetime):
        return v.timestamp()
    if isinstance(v, date):
        return datetime(v.year, v.month, v.day).timestamp()
    if isinstance(v, str):
        return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    return float(v)


async def plot_tables(args: PlotTablesInput, call: CallContext) -> PlotTablesOutput:
    from tables import charts

    started = time.monotonic()
    folder = await query_folder(call, args.dataset_id)
    first = await _plot_query(call, folder, args.sql, POINT_BUDGET)
    kind, x, y, groups, notes = _pick(args, first.columns, first.rows)
    names = [c.name for c in first.columns]
    inner = args.sql.strip().rstrip(";").strip()
    gsel = "".join(f", {ident(g.name)}" for g in groups)
    reduced: Reduced = "none"
    bucket: str | None = None
    columns, rows = names, first.rows
    total = first.total
    if kind == "bar" and len(rows) > BAR_BUDGET:
        rows, reduced = rows[:BAR_BUDGET], "first_rows"
        notes.append(f"Showing the first {BAR_BUDGET} bars of {total if total is not None else 'more'} rows: "
                     "aggregate with GROUP BY or filter in the SQL for fewer.")
    elif (first.more or first.by_bytes) and kind == "line" and x.type in charts.TEMPORAL:
        gcount = f", count(DISTINCT ({', '.join(ident(g.name) for g in groups)}))" if groups else ""
        stats = await _plot_query(call, folder, f"SELECT min({ident(x.name)}), max({ident(x.name)}), count(*){gcount} "
                                         f"FROM ({inner}) AS q WHERE {ident(x.name)} IS NOT NULL", 1)
        lo, hi, total = stats.rows[0][0], stats.rows[0][1], stats.rows[0][2]
        ngroups = max(1, stats.rows[0][3] if groups else 1)
        span = _seconds(hi) - _seconds(lo) if lo is not None and hi is not None else 0
        width_s, bucket = _bucket_for(span, POINT_BUDGET // ngroups)
        if x.type == "date" and width_s < 86400:
            width_s, bucket = 86400, "1 day"
        sql = (f"SELECT time_bucket(INTERVAL '{bucket}', {ident(x.name)}) AS {ident(x.name)}{gsel}, avg({ident(y.name)}) AS "
               f"{ident(y.name)} FROM ({inner}) AS q WHERE {ident(x.name)} IS NOT NULL GROUP BY ALL ORDER BY ALL")
        agg = await _plot_query(call, folder, sql, POINT_BUDGET)
        columns, rows, reduced = [c.name for c in agg.columns], agg.rows, "time_buckets"
        notes.append(f"The query's {total} rows are averaged into buckets of {bucket} (mean of {y.name} per bucket"
                     + (" and group" if groups else "") + f"): {len(rows)} points, within the budget of {POINT_BUDGET}.")
        if agg.more or agg.by_bytes:
            notes.append(f"Only the first {POINT_BUDGET} buckets are drawn: narrow the time range in the SQL.")
    elif first.more or first.by_bytes:
        order = f" ORDER BY {ident(x.name)}" if kind == "line" else ""
        sql = (f"SELECT {ident(x.name)}, {ident(y.name)}{gsel} FROM ({inner}) AS q USING SAMPLE reservoir({POINT_BUDGET} "
               f"ROWS) REPEATABLE (43){order}")
        sample = await _plot_query(call, folder, sql, POINT_BUDGET)
        columns, rows, reduced = [c.name for c in sample.columns], sample.rows, "sample"
        notes.append(f"A random sample of {len(rows)} of the query's "
                     f"{total if total is not None else 'many'} rows is drawn (reservoir, repeatable), within the "
                     f"budget of {POINT_BUDGET} points.")
    xi, yi = columns.index(x.name), columns.index(y.name)
    gi = [columns.index(g.name) for g in groups]
    values: list[dict[str, Any]] = []
    for r in rows:
        point: dict[str, Any] = {"x": r[xi], "y": r[yi]}
        if gi:
            point["c"] = _group_value([r[i] for i in gi])
        values.append(point)
    room = call.cfg.limits.hard_max_result_bytes - SPEC_RESERVE
    size = compact_size(values)
    if size > room:
        step = math.ceil(size / room)
        values, reduced = values[::step], "thinned"
        notes.append(f"Every {step}th point is drawn: the data must fit the result budget of "
                     f"{call.cfg.limits.hard_max_result_bytes} bytes (limits.hard_max_result_bytes).")
    ngroups = len({v.get("c") for v in values}) if gi else 0
    if ngroups > MAX_GROUPS:
        notes.append(f"{ngroups} colour groups: the legend lists only those that fit; filter in the SQL for fewer.")
    record = first.dataset.record
    sites = list((record.get("selection") or {}).get("siteCodes") or [])
    product = record.get("product", "")
    cites = query_citations(first)
    xf = charts.Field("x", charts.axis_title(x.name, x.type, x.units), charts.vega_type(x.type, kind, "x"))
    yf = charts.Field("y", charts.axis_title(y.name, y.type, y.units), "quantitative")
    group_title = " / ".join(g.name for g in groups)
    cf = charts.Field("c", group_title, "nominal") if groups else None
    word = {"line": "over", "bar": "by", "scatter": "against"}[kind]
    title = args.title or f"{y.name} {word} {x.name}" + (f", by {group_title}" if groups else "")
    where = f"{product}" + (f" at {', '.join(sites)}" if sites else "")
    texts = [(c.text or f"NEON {product}, {c.release}") + (f" https://doi.org/{c.doi}" if c.doi and c.doi not in
                                                               (c.text or "") else "") for c in cites]
    subtitle = [where, *charts.caption([f"Data: {t}" for t in texts])]
    vl = charts.spec(kind, values, xf, yf, cf, title=title, subtitle=subtitle)
    png = await asyncio.to_thread(charts.render_png, vl)
    w, h = charts.png_size(png)
    if any(v["y"] is None for v in values):
        notes.append(f"Rows where {y.name} is null are gaps in the chart.")
    steps = [NextStep(tool="eco_query_tables", arguments={"dataset_id": args.dataset_id, "sql": args.sql},
                      why="The numbers behind the chart, with their units and citation.")]
    steps += query_steps(QueryTablesInput(dataset_id=args.dataset_id, sql=args.sql), product, sites, cites, 0, False)
    out = PlotTablesOutput(
        dataset_id=first.dataset.id, product_code=product, chart=kind,
        x=PlotAxis(column=x.name, type=x.type, units=x.units, title=xf.title),
        y=PlotAxis(column=y.name, type=y.type, units=y.units, title=yf.title),
        color=[g.name for g in groups], groups=ngroups, points=len(values), query_rows=total, reduced=reduced,
        bucket=bucket, image=PlotImage(mime_type="image/png", width=w, height=h, bytes=len(png)), vega_lite=vl,
        tables_read=[t.name for t in first.tables], citations=cites, seconds=round(time.monotonic() - started, 4),
        notes=notes, next_steps=steps, source=Source(origin="local", endpoints=[]))
    out._png = png
    return out
