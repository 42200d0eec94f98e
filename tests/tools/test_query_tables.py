"""eco_query_tables through the SDK's real MCP client: over HTTP on a dataset in the server's
dataset store (where eco_stack_tables builds over HTTP; the download directory is not looked in),
and over a stdio subprocess from eco_stack_tables' own answer to the query, then to the BibTeX its
nextSteps point at. Units, citations, truncation by the limit and by the result budget, errors
naming the sql field, and no server path in any answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mcp import Client

from tests.catalog.celery_worker import require_postgres
from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server, sim_stdio, stdio_env  # noqa: F401  (fixtures)
from tests.tables.query_support import SOIL, stack_soil
from tests.tools.conftest import sim_config
from tests.tools.stack_server_support import record_ready, rows_cleared, store  # noqa: F401  (fixtures)

MONTHLY = ("SELECT siteID, verticalPosition, date_trunc('month', startDateTime) AS month, "
           "avg(soilTempMean) AS meanTemp, count(*) AS n FROM ST_30_minute GROUP BY ALL ORDER BY ALL")


def _step(payload: dict, tool: str) -> dict:
    return next(s["arguments"] for s in payload["nextSteps"] if s["tool"] == tool)


def _stored(tmp_path: Path, store: Path, blocker: object) -> str:  # noqa: F811
    require_postgres()  # the server's threads read the store's rows the test writes
    ds_id, record = stack_soil(tmp_path / "downloads", into=store)
    record_ready(blocker, ds_id, record, store / ds_id)
    return ds_id


async def test_queries_over_http_answer_units_citations_and_truncation_and_never_a_path(
        http_server, sim_cfg, sim, active_config, tmp_path, store, rows_cleared, django_db_blocker):  # noqa: F811
    ds_id = _stored(tmp_path, store, django_db_blocker)
    # A dataset in the download directory (as stdio stacks): over HTTP it is not there to read.
    downloads = tmp_path / "downloads"
    local_id, _ = stack_soil(downloads, window=("2024-08", "2024-08"))
    cfg = sim_config(sim, server__transport="http", downloads__directory=str(downloads),
                     tables__store_directory=str(store))
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"eco_query_tables", "eco_stack_tables"} <= set(tools)
            texts = []

            async def call(args: dict) -> object:
                result = await client.call_tool("eco_query_tables", args)
                texts.append(json.dumps(result.model_dump(mode="json")))
                return result

            body = assert_valid_tool_result(tools["eco_query_tables"], await call({"dataset_id": ds_id,
                                                                                   "sql": MONTHLY}))
            assert [c["name"] for c in body["columns"]] == ["siteID", "verticalPosition", "month", "meanTemp", "n"]
            assert body["columns"][3] == {"name": "meanTemp", "type": "double", "units": None}
            assert body["rows"][0][:3] == ["HARV", "501", "2024-08-01T00:00:00Z"] and body["returned"] == 4
            assert body["totalRows"] == 4 and not body["truncated"] and body["tablesRead"] == ["ST_30_minute"]
            assert body["citations"] == [{"release": "RELEASE-2026", "doi": "10.48443/sim-soil", "text": body[
                "citations"][0]["text"], "tables": ["ST_30_minute"]}]
            cite = _step(body, "eco_get_citation")
            assert cite == {"product": SOIL, "format": "bibtex", "release": "RELEASE-2026", "site_codes": ["HARV"]}
            bib = await client.call_tool("eco_get_citation", cite)
            assert not bib.is_error and "@" in bib.structured_content["bibtex"]

            bare = assert_valid_tool_result(tools["eco_query_tables"], await call({
                "dataset_id": ds_id, "sql": "SELECT startDateTime, soilTempMean FROM ST_30_minute ORDER BY 1",
                "limit": 5}))
            assert bare["columns"][1]["units"] == "celsius" and bare["returned"] == 5
            assert bare["truncated"] and bare["truncatedBy"] == "limit" and bare["totalRows"] == 5856
            more = _step(bare, "eco_query_tables")
            assert "OFFSET 5" in more["sql"] and more["dataset_id"] == ds_id
            after = assert_valid_tool_result(tools["eco_query_tables"], await call(more))
            assert after["rows"][0][0] >= bare["rows"][-1][0] and after["returned"] == 5

            big = await call({"dataset_id": ds_id, "sql": "SELECT * FROM ST_1_minute", "limit": 5000})
            big_body = assert_valid_tool_result(tools["eco_query_tables"], big)
            assert big_body["truncatedBy"] == "bytes" and 0 < big_body["returned"] < 5000
            assert len(json.dumps(big_body, separators=(",", ":")).encode()) <= cfg.limits.max_result_bytes

            err = assert_error(await call({"dataset_id": ds_id, "sql": "SELECT * FROM read_csv('/etc/passwd')"}),
                               "invalid_argument")
            assert "sql" in err["message"]
            err = assert_error(await call({"dataset_id": ds_id, "sql": "SELECT * FROM ST_30_minutes"}), "not_found")
            assert err["details"]["didYouMean"][0] == "ST_30_minute"
            err = assert_error(await call({"dataset_id": ds_id, "sql": "SELECT 1; DROP VIEW ST_30_minute"}),
                               "invalid_argument")
            err = assert_error(await call({"dataset_id": ds_id + "x", "sql": "SELECT 1"}), "not_found")
            # A caller without a token of its own is shown no dataset id (another caller's, maybe).
            assert "dataset_id" in err["message"] and err["details"]["didYouMean"] == []
            err = assert_error(await call({"dataset_id": "../../etc", "sql": "SELECT 1"}), "not_found")
            err = assert_error(await call({"dataset_id": local_id, "sql": "SELECT 1"}), "not_found")
            assert "dataset store" in err["message"]
            positioned = assert_valid_tool_result(tools["eco_query_tables"], await call({
                "dataset_id": ds_id, "sql": "SELECT sensorLocationID, zOffset, avg(soilTempMean) AS t FROM "
                "ST_30_minute_positioned WHERE heightRank = 1 GROUP BY ALL"}))
            assert {c["name"]: c["units"] for c in positioned["columns"]}["zOffset"] == "meter"
            assert positioned["tablesRead"] == ["ST_30_minute_positioned"]
    for text in texts:
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text


async def test_stack_then_query_then_cite_over_stdio(stdio_env, sim, tmp_path):  # noqa: F811
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    params = sim_stdio(stdio_env, sim, sim.issue_token(), downloads)
    async with Client(params, mode="2026-07-28") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        stacked = assert_valid_tool_result(tools["eco_stack_tables"], await client.call_tool("eco_stack_tables", {
            "product": SOIL, "site_codes": ["HARV"], "start_month": "2024-08", "end_month": "2024-08",
            "tables": ["ST_30_minute"]}))
        folder = Path(stacked["folder"])
        assert (folder / "ST_30_minute.parquet").is_file()
        body = assert_valid_tool_result(tools["eco_query_tables"], await client.call_tool("eco_query_tables", {
            "dataset_id": stacked["datasetId"], "sql": "SELECT verticalPosition, soilTempMean, zOffset FROM "
            "ST_30_minute_positioned WHERE heightRank = 1 LIMIT 3"}))
        assert [c["units"] for c in body["columns"]] == [None, "celsius", "meter"] and body["returned"] == 3
        assert {c["release"] for c in body["citations"]} <= set(stacked["releases"])
        for c in body["citations"]:
            stacked_cite = next(s for s in stacked["citations"] if s["release"] == c["release"])
            assert c["doi"] == stacked_cite["doi"] and c["text"] == stacked_cite["text"]
        cite = _step(body, "eco_get_citation")
        bib = await client.call_tool("eco_get_citation", cite)
        assert not bib.is_error, bib.structured_content
        assert bib.structured_content["bibtex"]


async def test_a_long_query_runs_off_the_event_loop_and_is_cancelled_at_its_limit(
        http_server, sim_cfg, sim, active_config, tmp_path, store, rows_cleared, django_db_blocker):  # noqa: F811
    ds_id = _stored(tmp_path, store, django_db_blocker)
    cfg = sim_config(sim, server__transport="http", tables__store_directory=str(store), tables__query_timeout_s=8)
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            long = asyncio.create_task(client.call_tool("eco_query_tables", {
                "dataset_id": ds_id, "sql": "SELECT count(*) FROM range(1000000000000) a"}))
            await asyncio.sleep(0.2)
            ping = await client.call_tool("eco_ping", {})
            assert not ping.is_error and not long.done()  # the server answered while the query ran
            err = assert_error(await long, "query_too_large")
            assert err["details"]["reason"] == "time" and "sql" in err["message"]
            again = await client.call_tool("eco_query_tables", {"dataset_id": ds_id, "sql": "SELECT 1 AS one"})
            assert not again.is_error and again.structured_content["rows"] == [[1]]
