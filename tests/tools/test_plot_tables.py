"""eco_plot_tables through the SDK's real MCP client, over HTTP (a dataset in the server's store)
and over a stdio subprocess (a dataset in the download directory): the answer holds a PNG image
content of the promised size and, as structured content, the Vega-Lite spec of the same chart,
valid against Vega-Lite's schema, with units in its axis titles and the citation as caption. The
figures drawn are checked against a second computation over the Parquet file (pyarrow and
Python); a million-row query is averaged into time buckets within the point and byte budgets."""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow.parquet as pq
from mcp import Client
from PIL import Image

from families.tables.plot import BAR_BUDGET, POINT_BUDGET
from tests.catalog.celery_worker import require_postgres
from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server, sim_stdio, stdio_env  # noqa: F401  (fixtures)
from tests.tables.query_support import stack_soil
from tests.tools.conftest import sim_config
from tests.tools.stack_server_support import record_ready, rows_cleared, store  # noqa: F401  (fixtures)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SERIES = "SELECT startDateTime, verticalPosition, soilTempMean FROM ST_30_minute"
# 5,856 rows times 171: each half-hour's reading repeated at its first 171 seconds, so every
# 2-hour bucket's mean is the same as the plain series'.
MILLION = ("SELECT startDateTime + to_seconds(r.i) AS startDateTime, verticalPosition, soilTempMean "
           "FROM ST_30_minute, range(171) AS r(i)")
DAILY = ("SELECT strftime(startDateTime, '%Y-%m-%d') AS day, avg(soilTempMean) AS meanTemp FROM ST_30_minute "
         "WHERE verticalPosition = '501' GROUP BY ALL ORDER BY ALL LIMIT 48")
PNG_MAX_BYTES = 300_000


@cache
def vega_lite_validator() -> jsonschema.Draft7Validator:
    """Vega-Lite 6.4.3's JSON schema (from its npm package, vendored gzipped)."""
    with gzip.open(FIXTURES / "vega-lite-v6.4.3.schema.json.gz", "rt") as f:
        return jsonschema.Draft7Validator(json.load(f))


def chart(result: Any, tool: Any) -> tuple[dict[str, Any], Image.Image, bytes]:
    """The answer's structured content, its image content opened, and the PNG's bytes: one image,
    PNG, at least 600 px wide, within a few hundred KB, the size the answer says."""
    body = assert_valid_tool_result(tool, result)
    images = [c for c in result.content if c.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    png = base64.b64decode(images[0].data)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) <= PNG_MAX_BYTES
    img = Image.open(io.BytesIO(png))
    assert img.format == "PNG" and img.width >= 600 and img.height >= 300
    assert body["image"] == {"mimeType": "image/png", "width": img.width, "height": img.height, "bytes": len(png)}
    # The text content is the structured content's JSON, as for every tool.
    assert json.loads(next(c.text for c in result.content if c.type == "text")) == body
    vega_lite_validator().validate(body["vegaLite"])
    return body, img, png


def bucket_means(folder: Path, seconds: int) -> dict[tuple[str, str], float]:
    """The second computation: soilTempMean averaged by verticalPosition and UTC bucket of
    `seconds`, from the Parquet file with pyarrow and Python."""
    t = pq.read_table(folder / "ST_30_minute.parquet", columns=["startDateTime", "verticalPosition", "soilTempMean"])
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for when, pos, v in zip(*(t.column(i).to_pylist() for i in range(3)), strict=True):
        if v is None:
            continue
        epoch = int(when.timestamp()) // seconds * seconds
        start = when.fromtimestamp(epoch, when.tzinfo).strftime("%Y-%m-%dT%H:%M:%SZ")
        s = sums[(start, pos)]
        s[0] += v
        s[1] += 1
    return {k: s / n for k, (s, n) in sums.items()}


def drawn(body: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(v["x"], v["c"]): v["y"] for v in body["vegaLite"]["data"]["values"] if v["y"] is not None}


def assert_close(got: dict[Any, float], want: dict[Any, float]) -> None:
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-9 for k in want), [(k, got[k], want[k]) for k in want
                                                              if abs(got[k] - want[k]) >= 1e-9][:5]


def assert_series_chart(body: dict[str, Any], folder: Path) -> None:
    """The soil temperature series: a line over UTC time, units on the y axis, a colour per
    sensor depth with a legend, the citation in the caption, averaged to the point budget."""
    spec = body["vegaLite"]
    assert spec["mark"]["type"] == "line" and body["chart"] == "line"
    enc = spec["encoding"]
    assert enc["y"]["title"] == "soilTempMean (celsius)" and body["y"]["units"] == "celsius"
    assert enc["x"]["title"] == "startDateTime (UTC)" and enc["x"]["type"] == "temporal"
    assert enc["x"]["scale"] == {"type": "utc"}
    assert enc["color"]["field"] == "c" and enc["color"]["title"] == "verticalPosition"
    assert body["color"] == ["verticalPosition"] and body["groups"] == 2
    assert any("10.48443/sim-soil" in line for line in spec["title"]["subtitle"])
    assert body["citations"][0]["doi"] == "10.48443/sim-soil"
    assert body["reduced"] == "time_buckets" and body["bucket"] == "2 hours"
    assert body["queryRows"] == 5856 and body["points"] <= POINT_BUDGET
    assert any("buckets of 2 hours" in n for n in body["notes"])
    assert_close(drawn(body), bucket_means(folder, 7200))


async def test_charts_over_http_are_a_png_and_the_vega_lite_spec_of_the_same_figures(
        http_server, sim_cfg, sim, active_config, tmp_path, store, rows_cleared, django_db_blocker):  # noqa: F811
    require_postgres()  # the server's threads read the store's rows the test writes
    ds_id, record = stack_soil(tmp_path / "downloads", into=store)
    record_ready(django_db_blocker, ds_id, record, store / ds_id)
    cfg = sim_config(sim, server__transport="http", tables__store_directory=str(store))
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            tool = tools["eco_plot_tables"]
            assert tool.annotations.read_only_hint is True

            async def plot(args: dict[str, Any]) -> Any:
                return await client.call_tool("eco_plot_tables", {"dataset_id": ds_id, **args})

            body, _, _ = chart(await plot({"sql": SERIES}), tool)
            assert_series_chart(body, store / ds_id)
            steps = {s["tool"]: s["arguments"] for s in body["nextSteps"]}
            assert steps["eco_query_tables"] == {"dataset_id": ds_id, "sql": SERIES}
            assert steps["eco_get_citation"]["release"] == "RELEASE-2026"

            # A million rows: averaged in SQL into the same buckets, within the point and byte budgets.
            big, _, _ = chart(await plot({"sql": MILLION}), tool)
            assert big["queryRows"] == 5856 * 171 and big["reduced"] == "time_buckets"
            assert big["points"] <= POINT_BUDGET
            assert_close(drawn(big), drawn(body))
            assert len(json.dumps(big, separators=(",", ":")).encode()) <= cfg.limits.hard_max_result_bytes

            # Bars by day: the bars are the rows eco_query_tables answers for the same SQL.
            bars, _, _ = chart(await plot({"sql": DAILY}), tool)
            rows = (await client.call_tool("eco_query_tables", {"dataset_id": ds_id, "sql": DAILY})).structured_content
            assert bars["chart"] == "bar" and bars["vegaLite"]["mark"]["type"] == "bar"
            assert [[v["x"], v["y"]] for v in bars["vegaLite"]["data"]["values"]] == rows["rows"]
            assert bars["points"] == 48 <= BAR_BUDGET and bars["reduced"] == "none"
            # Bars past the budget: the first ones, and a note says so.
            hourly = ("SELECT strftime(startDateTime, '%Y-%m-%d %H') AS hour, avg(soilTempMean) AS t FROM ST_30_minute "
                      "GROUP BY ALL ORDER BY ALL")
            many, _, _ = chart(await plot({"sql": hourly}), tool)
            assert many["chart"] == "bar" and many["points"] == BAR_BUDGET and many["reduced"] == "first_rows"
            assert any(f"first {BAR_BUDGET} bars" in n for n in many["notes"])
            # eco_query_tables offers the chart of a result with a number in it.
            offered = [s["arguments"] for s in rows["nextSteps"] if s["tool"] == "eco_plot_tables"]
            assert offered == [{"dataset_id": ds_id, "sql": DAILY}]

            # A scatter of two measurements, sampled to the budget; every point is a row of the table.
            scatter, _, _ = chart(await plot({"sql": "SELECT soilTempMinimum, soilTempMaximum FROM ST_30_minute",
                                              "chart": "scatter"}), tool)
            assert scatter["reduced"] == "sample" and scatter["points"] == POINT_BUDGET
            enc = scatter["vegaLite"]["encoding"]
            assert enc["x"]["title"] == "soilTempMinimum (celsius)" and enc["y"]["title"] == "soilTempMaximum (celsius)"
            t = pq.read_table(store / ds_id / "ST_30_minute.parquet", columns=["soilTempMinimum", "soilTempMaximum"])
            pairs = set(zip(*(c.to_pylist() for c in t.columns), strict=True))
            assert {(v["x"], v["y"]) for v in scatter["vegaLite"]["data"]["values"]} <= pairs

            # Bad inputs name their field; the sandbox's refusal is eco_query_tables'.
            err = assert_error(await plot({"sql": SERIES, "y": "verticalPosition"}), "invalid_argument")
            assert err["message"].startswith("y:") and err["details"]["field"] == "y"
            err = assert_error(await plot({"sql": SERIES, "x": "startDatetime2"}), "invalid_argument")
            assert err["details"]["field"] == "x" and "startDateTime" in err["details"]["didYouMean"]
            err = assert_error(await plot({"sql": "SELECT * FROM read_csv('/etc/passwd')"}), "invalid_argument")
            assert "sql" in err["message"]
            assert_error(await plot({"sql": SERIES, "chart": "pie"}), "invalid_argument")
            err = assert_error(await client.call_tool("eco_plot_tables", {"dataset_id": ds_id + "x", "sql": SERIES}),
                               "not_found")
            # As eco_query_tables: a caller without a token of its own is shown no dataset id.
            assert err["message"].startswith("dataset_id:") and err["details"]["didYouMean"] == []


async def test_a_chart_over_stdio_is_a_png_with_the_vega_lite_spec(stdio_env, sim, tmp_path):  # noqa: F811
    downloads = tmp_path / "downloads"
    ds_id, _ = stack_soil(downloads)
    params = sim_stdio(stdio_env, sim, sim.issue_token(), downloads)
    async with Client(params, mode="2026-07-28") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("eco_plot_tables", {"dataset_id": ds_id, "sql": SERIES})
        body, _, _ = chart(result, tools["eco_plot_tables"])
        assert_series_chart(body, downloads / "datasets" / ds_id)
