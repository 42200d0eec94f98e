"""Dataset pages of the HTTP deployment, for staff (Django's login): the store's datasets, and per
dataset its tables (columns with types and units, rows, time spans, a preview), a SQL box, the
chart of its result, the citation with its BibTeX, and each table as CSV or Parquet.

The SQL box and the chart run the tools' own reads (families.tables.query.query_tables and
families.tables.plot.plot_tables) with the server's configuration, as eco_query_tables and
eco_plot_tables run over HTTP: the same sandbox, limits and engine, the same answer and the same
refusals (shown as messages). The chart is drawn in the page by vega-embed from the project's
static files: no request leaves the page.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import path

from eco_core.config import get_config
from eco_core.errors import EcoError
from tables import names
from tables.admin import mb
from tables.models import READY, Dataset

PREVIEW_ROWS = 10
SQL_ROWS = 200
CSV_BATCH_ROWS = 8192


def _call() -> Any:
    from families.call import CallContext

    cfg = get_config()
    return CallContext(cfg=cfg, transport="http", protocol_version="2026-07-28")


def _folder(dataset_id: str) -> Path:
    """A ready dataset's folder (its last use touched), else 404."""
    from tables import store

    folder = store.ready_folder(dataset_id)
    if folder is None:
        raise Http404("no ready dataset with this id")
    return folder


def _record(folder: Path) -> dict[str, Any]:
    from tables import dataset

    record = dataset.load(folder)
    if record is None:
        raise Http404("the dataset has no readable record")
    return record


@staff_member_required
def dataset_list(request: HttpRequest) -> HttpResponse:
    from tables import dataset, store

    cfg = get_config()
    rows = []
    for row in Dataset.objects.order_by("-last_used_at"):
        sel = row.selection or {}
        record = dataset.load(store.folder_of(cfg, row.dataset_id)) if row.state == READY else None
        tables = (record or {}).get("tables") or {}
        rows.append({
            "id": row.dataset_id, "product": row.product, "state": row.state, "size": mb(row.size_bytes),
            "sites": ", ".join(sel.get("siteCodes") or []),
            "months": f"{sel.get('startMonth', '')} to {sel.get('endMonth', '')}", "package": sel.get("package"),
            "rows": sum(int(t.get("rows") or 0) for t in tables.values()) if record else None,
            "last_used": row.last_used_at,
            "citation": "; ".join(c.get("text") or "" for c in (record or {}).get("citations") or []),
            "ready": row.state == READY,
        })
    return render(request, "datasets/list.html", {**admin.site.each_context(request), "datasets": rows,
                                                  "title": "Datasets"})


def _tables(record: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, t in (record.get("tables") or {}).items():
        span = t.get("timeSpan") or {}
        out.append({"name": name, "rows": t.get("rows"), "layout": t.get("layout"), "size": mb(t.get("bytes")),
                    "columns": t.get("columns") or [], "start": span.get("start"), "end": span.get("end"),
                    "csv": bool(t.get("file"))})
    return out


def _query(dataset_id: str, sql: str, limit: int) -> tuple[dict[str, Any] | None, str | None]:
    """eco_query_tables' answer for the SQL, or the refusal's message."""
    from families.tables.query import QueryTablesInput, query_tables

    try:
        args = QueryTablesInput(dataset_id=dataset_id, sql=sql, limit=limit)
        out = async_to_sync(query_tables)(args, _call())
    except EcoError as exc:
        return None, f"{exc.code}: {exc.message}"
    except ValueError as exc:  # the input's own bounds (pydantic)
        return None, f"invalid_argument: {exc}"
    return out.model_dump(mode="json", by_alias=True), None


def _chart(dataset_id: str, sql: str) -> tuple[dict[str, Any] | None, list[str]]:
    """eco_plot_tables' Vega-Lite spec for the SQL, with its notes; none when the result has
    nothing to draw (the refusal is the note)."""
    from families.tables.plot import PlotTablesInput, plot_tables

    try:
        out = async_to_sync(plot_tables)(PlotTablesInput(dataset_id=dataset_id, sql=sql), _call())
    except EcoError as exc:
        return None, [f"No chart: {exc.message}"]
    return out.vega_lite, out.notes


@staff_member_required
def dataset_detail(request: HttpRequest, dataset_id: str) -> HttpResponse:
    from families.tables.query import query_next_step

    folder = _folder(dataset_id)
    record = _record(folder)
    tables = _tables(record)
    step = query_next_step(record)
    default_sql = step.arguments["sql"] if step is not None else ""
    sql = (request.GET.get("sql") or default_sql).strip()
    result: dict[str, Any] | None = None
    error: str | None = None
    spec: dict[str, Any] | None = None
    chart_notes: list[str] = []
    if sql:
        result, error = _query(dataset_id, sql, SQL_ROWS)
        if result is not None:
            spec, chart_notes = _chart(dataset_id, sql)
    previews = []
    for t in tables:
        if t["name"] == names.SCIENCE_REVIEW_FLAGS:
            continue
        preview, _ = _query(dataset_id, f'SELECT * FROM "{t["name"]}" LIMIT {PREVIEW_ROWS}', PREVIEW_ROWS)
        previews.append((t["name"], preview))
    return render(request, "datasets/detail.html", {
        **admin.site.each_context(request), "title": dataset_id, "id": dataset_id, "record": record, "tables": tables, "previews": previews,
        "sql": sql, "result": result, "error": error, "spec": spec, "chart_notes": chart_notes,
        "citations": record.get("citations") or [], "selection": record.get("selection") or {}, "sql_rows": SQL_ROWS,
    })


def _table_file(folder: Path, record: dict[str, Any], table: str) -> Path:
    t = (record.get("tables") or {}).get(table)
    if not t or not t.get("file"):
        raise Http404("no such table")
    path = folder / t["file"]
    if not path.is_file() or path.parent != folder:
        raise Http404("no such table")
    return path


def _csv_rows(path: Path) -> Iterator[bytes]:
    """The table as CSV, a batch at a time: values as eco_query_tables gives them (times ISO 8601
    UTC with Z, nulls empty)."""
    import pyarrow.parquet as pq

    from tables.query import plain

    pf = pq.ParquetFile(path)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(pf.schema_arrow.names)
    for batch in pf.iter_batches(batch_size=CSV_BATCH_ROWS):
        for row in zip(*(c.to_pylist() for c in batch.columns), strict=True):
            writer.writerow(["" if v is None else plain(v) for v in row])
        yield buf.getvalue().encode()
        buf.seek(0)
        buf.truncate()
    tail = buf.getvalue()
    if tail:
        yield tail.encode()


def _next_chunk(rows: Iterator[bytes]) -> bytes | None:
    return next(rows, None)


async def _async_rows(path: Path) -> AsyncIterator[bytes]:
    """_csv_rows off the event loop: under ASGI a response streams an asynchronous iterator (a
    synchronous one is read whole into memory first, with a warning)."""
    rows = _csv_rows(path)
    while True:
        chunk = await sync_to_async(_next_chunk, thread_sensitive=False)(rows)
        if chunk is None:
            return
        yield chunk


@staff_member_required
def table_csv(request: HttpRequest, dataset_id: str, table: str) -> StreamingHttpResponse:
    folder = _folder(dataset_id)
    path = _table_file(folder, _record(folder), table)
    resp = StreamingHttpResponse(_async_rows(path), content_type="text/csv; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="{dataset_id}.{table}.csv"'
    return resp


@staff_member_required
def table_parquet(request: HttpRequest, dataset_id: str, table: str) -> FileResponse:
    folder = _folder(dataset_id)
    path = _table_file(folder, _record(folder), table)
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"{dataset_id}.{table}.parquet",
                        content_type="application/vnd.apache.parquet")


# Routed under /datasets/ (eco_service/urls.py).
app_name = "datasets"
urlpatterns = [
    path("", dataset_list, name="list"),
    path("<str:dataset_id>/", dataset_detail, name="detail"),
    path("<str:dataset_id>/<str:table>.csv", table_csv, name="csv"),
    path("<str:dataset_id>/<str:table>.parquet", table_parquet, name="parquet"),
]
