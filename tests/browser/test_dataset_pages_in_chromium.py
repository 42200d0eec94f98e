"""The dataset pages as a staff member sees them, under real uvicorn with DEBUG off, in headless
chromium: the list of the store's datasets, a dataset's page with its chart drawn by vega-embed
from the project's static files (no request leaves the page; a screenshot is kept), the SQL box's
answer equal to eco_query_tables' over MCP, the sandbox's refusal shown as a message, a table's CSV
equal to the table (checked against the Parquet file with pyarrow and against eco_query_tables),
and anonymous requests refused."""

from __future__ import annotations

import asyncio
import concurrent.futures
import csv
import io
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from mcp import Client

from tests.browser.conftest import STAFF_USER, Service, _manage, run_service
from tests.tables.query_support import stack_soil

# Kept after the run (pytest's own temporary folders are rotated away): look at them.
SCREENSHOTS = Path(tempfile.gettempdir()) / "eco-browser-screenshots"
TABLE = "ST_30_minute"
DAILY = ("SELECT verticalPosition, date_trunc('day', startDateTime) AS day, avg(soilTempMean) AS meanTemp "
         "FROM ST_30_minute GROUP BY ALL ORDER BY ALL")


@pytest.fixture(scope="module")
def pages(sim, tmp_path_factory) -> Iterator[tuple[Service, str, Path]]:
    folder = tmp_path_factory.mktemp("dataset-pages")
    store = folder / "store"
    ds_id, record = stack_soil(folder / "downloads", into=store)

    def prepare(env: dict[str, str]) -> None:
        size = sum(p.stat().st_size for p in (store / ds_id).rglob("*") if p.is_file())
        row = {"dataset_id": ds_id, "product": record["product"], "selection": record["selection"],
               "size_bytes": size}
        _manage(env, "shell", "-c", "import json; from tables.models import Dataset, READY; from tables.store import now; "
                f"Dataset.objects.create(**json.loads({json.dumps(row)!r}), state=READY, requested_by='test', "
                "last_used_at=now(), progress={'phase': 'ready'})")

    with run_service(sim, folder, prepare, ECO_MCP_TABLES__STORE_DIRECTORY=str(store)) as service:
        yield service, ds_id, store / ds_id


@pytest.fixture
def page(pages, chromium) -> Iterator[Any]:
    service = pages[0]
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    p = context.new_page()
    p.goto(service.base + "/admin/login/?next=/datasets/")
    p.fill("#id_username", STAFF_USER)
    p.fill("#id_password", service.password)
    p.click("input[type=submit]")
    p.wait_for_url("**/datasets/")
    try:
        yield p
    finally:
        context.close()


def mcp_query(service: Service, ds_id: str, sql: str, limit: int = 200) -> dict[str, Any]:
    """eco_query_tables' answer from the same service, through the SDK's MCP client (on a thread of
    its own: Playwright's synchronous API holds this one's event loop)."""
    async def ask() -> dict[str, Any]:
        async with Client(service.base + "/mcp", mode="2026-07-28") as client:
            result = await client.call_tool("eco_query_tables", {"dataset_id": ds_id, "sql": sql, "limit": limit})
        assert not result.is_error, result.structured_content
        return result.structured_content

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, ask()).result()


def test_anonymous_requests_are_refused(pages):
    service, ds_id, _ = pages
    for path in ("/datasets/", f"/datasets/{ds_id}/", f"/datasets/{ds_id}/{TABLE}.csv",
                 f"/datasets/{ds_id}/{TABLE}.parquet"):
        resp = httpx.get(service.base + path, timeout=30)
        assert resp.status_code == 302 and resp.headers["location"].startswith("/admin/login/"), path
        assert "soilTemp" not in resp.text


def test_a_staff_member_browses_a_dataset_runs_sql_and_sees_its_chart(pages, page):
    service, ds_id, folder = pages
    SCREENSHOTS.mkdir(exist_ok=True)
    print(f"dataset page screenshots: {SCREENSHOTS}", file=sys.stderr)
    elsewhere: list[str] = []
    page.on("request", lambda r: elsewhere.append(r.url) if not r.url.startswith(service.base) else None)
    # The list: the dataset with its state, size in MB, rows and citation, linking to its page.
    row = page.locator("#datasets tr.dataset", has_text=ds_id)
    text = row.inner_text()
    assert "ready" in text and " MB" in text and "NEON (2026). Soil temperature" in text
    total = sum(t["rows"] for t in json.loads((folder / "dataset.json").read_text())["tables"].values())
    assert str(total) in text
    page.screenshot(path=str(SCREENSHOTS / "datasets-list.png"), full_page=True)

    # The dataset's page opens on the stack's proposed query, charted.
    row.locator("a").click()
    page.wait_for_selector("#chart svg", timeout=60_000)
    assert page.locator("#chart svg .mark-line path, #chart svg .mark-line, #chart svg path").count() > 0
    columns = page.eval_on_selector_all("#table-ST_30_minute table.columns tbody tr",
                                        "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert ["soilTempMean", "double", "celsius"] in columns
    assert "@misc{soil" in (page.text_content(".citation pre.bibtex") or "")
    page.screenshot(path=str(SCREENSHOTS / "dataset-page.png"), full_page=True)

    # The SQL box answers as eco_query_tables does, and charts the result.
    page.fill("#sql-box textarea", DAILY)
    page.click("#sql-box input[type=submit]")
    page.wait_for_selector("#chart svg", timeout=60_000)
    cells = page.eval_on_selector_all("#sql-result tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    heads = page.eval_on_selector_all("#sql-result thead th", "hs => hs.map(h => h.textContent)")
    answer = mcp_query(service, ds_id, DAILY)
    assert heads == [c["name"] + (f" ({c['units']})" if c["units"] else "") for c in answer["columns"]]
    assert cells == [["" if v is None else str(v) for v in r] for r in answer["rows"]]
    assert len(cells) == 122
    page.screenshot(path=str(SCREENSHOTS / "dataset-sql-chart.png"), full_page=True)

    # The sandbox's refusal is a message on the page.
    page.fill("#sql-box textarea", "SELECT * FROM read_csv('/etc/passwd')")
    page.click("#sql-box input[type=submit]")
    message = page.inner_text("#sql-error")
    assert message.startswith("invalid_argument") and "sql" in message and "root:" not in page.content()
    assert elsewhere == []

    # The table as CSV: the Parquet file's rows and columns, and eco_query_tables' count and mean.
    resp = page.context.request.get(f"{service.base}/datasets/{ds_id}/{TABLE}.csv")
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(resp.text())))
    table = pq.read_table(folder / f"{TABLE}.parquet")
    assert rows[0] == table.column_names and len(rows) - 1 == table.num_rows
    mean_at = rows[0].index("soilTempMean")
    values = [float(r[mean_at]) for r in rows[1:] if r[mean_at] != ""]
    assert values == [v for v in table.column("soilTempMean").to_pylist() if v is not None]
    stats = mcp_query(service, ds_id, f"SELECT count(*) AS n, avg(soilTempMean) AS m FROM {TABLE}")
    assert stats["rows"][0][0] == len(rows) - 1 and abs(stats["rows"][0][1] - sum(values) / len(values)) < 1e-9
    head = mcp_query(service, ds_id, f"SELECT * FROM {TABLE} LIMIT 5", limit=5)
    assert [["" if v is None else str(v) for v in r] for r in head["rows"]] == rows[1:6]
    parquet = page.context.request.get(f"{service.base}/datasets/{ds_id}/{TABLE}.parquet")
    assert parquet.status == 200 and parquet.body() == (folder / f"{TABLE}.parquet").read_bytes()


def test_the_admin_links_each_ready_dataset_to_its_page_with_its_size_in_mb(pages, page):
    service, ds_id, _ = pages
    page.goto(service.base + "/admin/tables/dataset/")
    link = page.locator("#result_list a", has_text=ds_id)
    assert link.get_attribute("href") == f"/datasets/{ds_id}/"
    assert " MB" in page.inner_text("#result_list")
    # A dataset the store does not hold (or not ready) has no page.
    assert page.goto(service.base + "/datasets/DP1.00041.001.basic.2024-08.2024-09.0000000000/").status == 404


