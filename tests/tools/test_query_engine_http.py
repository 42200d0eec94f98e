"""The attacks of issue 41 on eco_query_tables, through the SDK's MCP client over real HTTP and
without a token, against `manage.py eco_mcp --transport http` as a process of its own whose
resident memory is read from outside (/proc/<pid>/status) before and after: the SQL runs in the
server's engine worker processes, so the server's memory stays where it was (at most +100 MB, peak
included), and each attack gets its clear answer. Then kill -9 of an engine worker mid-query: the
caller gets a retryable answer and the next query works."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection
from mcp import Client

from eco_core.redact import token_hash
from tests.catalog.celery_worker import require_postgres
from tests.gateway.checks import assert_error
from tests.reliability.kill9_support import PYTHON, REPO, children, clean_env, memory_kb
from tests.tables.query_support import stack_soil
from tests.tools.stack_server_support import caller, record_ready

MB = 1024
TOKEN = "engine-test-token-0123456789abcdef"
# The dataset id the tokenless caller must never be shown (another caller's).
OTHERS = "DP1.00041.001.basic.2024-08.2024-09.0000000000"


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, sim: Any, django_db_setup: Any,
           django_db_blocker: Any) -> Iterator[tuple[str, Any, str, Path]]:
    """The server process (its URL and Popen) with a ready dataset in its store (its id, the
    store): one for the module, as a deployment serves call after call."""
    require_postgres()
    from tables.models import Dataset

    tmp_path = tmp_path_factory.mktemp("engine-http")
    store = tmp_path / "store"
    ds_id, record = stack_soil(tmp_path / "downloads", into=store)
    with django_db_blocker.unblock():
        Dataset.objects.filter(dataset_id__in=[ds_id, OTHERS]).delete()
    record_ready(django_db_blocker, ds_id, record, store / ds_id, requested_by=token_hash(TOKEN))
    record_ready(django_db_blocker, OTHERS, record, store / ds_id, requested_by="anonymous")
    db = connection.settings_dict
    port = _free_port()
    env = clean_env(
        DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        DJANGO_INSECURE_DEV_SECRET="1", ECO_MCP_DATA_DIR=str(tmp_path / "data"), ECO_MCP_ECO__BASE_URL=sim.base_url,
        ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url, ECO_MCP_TABLES__STORE_DIRECTORY=str(store),
        ECO_MCP_TABLES__ENGINE_WORKERS="2", ECO_MCP_SERVER__ALLOW_INSECURE_HEADER_TOKEN="true")
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp", "--transport", "http", "--bind-port", str(port),
                             "--no-prewarm"], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not come up"
            time.sleep(0.2)
        yield f"{base}/mcp", proc, ds_id, store
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        with django_db_blocker.unblock():
            Dataset.objects.filter(dataset_id__in=[ds_id, OTHERS]).delete()


async def test_no_query_grows_the_server_and_each_attack_gets_its_answer(served):
    url, proc, ds_id, store = served
    texts: list[str] = []
    async with Client(url, mode="2026-07-28") as client:

        async def call(sql: str, limit: int = 100, dataset_id: str = ds_id) -> Any:
            got = await client.call_tool("eco_query_tables", {"dataset_id": dataset_id, "sql": sql, "limit": limit})
            texts.append(json.dumps(got.model_dump(mode="json")))
            return got

        # Warm: the pool, its first worker, the tool's modules; what a serving process holds anyway.
        warm = await call("SELECT count(*) AS n FROM ST_30_minute")
        assert not warm.is_error and warm.structured_content["rows"] == [[5856]]
        before = memory_kb(proc.pid)

        many = await asyncio.gather(*(call("SELECT len(range(30000000)) AS n") for _ in range(3)))
        for got in many:  # each runs in a worker: answered, or stopped by the worker's limit
            if got.is_error:
                err = assert_error(got, "query_too_large")
                assert err["details"]["setting"] == "tables.engine_memory_mb"
            else:
                assert got.structured_content["rows"] == [[30000000]]
        for sql in ("SELECT len(range(200000000)) AS n", "SELECT length(repeat('x', 2000000000)) AS n"):
            err = assert_error(await call(sql), "query_too_large")
            assert err["details"]["reason"] == "memory" and "tables.engine_memory_mb" in err["message"]

        wide = await call("SELECT repeat('x', 300000) AS s FROM range(5000)", limit=5000)
        if wide.is_error:  # 2048 such values at once are over the worker's memory
            assert "tables.engine_memory_mb" in assert_error(wide, "query_too_large")["message"]
        else:
            assert wide.structured_content["returned"] >= 1

        # A value over the budget is cut, and the step to the next rows moves on.
        first = await call("SELECT x, repeat('x', 300000) AS s FROM range(50) t(x) ORDER BY x", limit=5000)
        body = first.structured_content
        assert not first.is_error and body["returned"] == 1 and body["truncatedBy"] == "bytes"
        assert body["rows"][0][0] == 0 and body["rows"][0][1].endswith("\u2026")
        assert any("limits.max_result_bytes" in n for n in body["notes"])
        step = next(s["arguments"] for s in body["nextSteps"] if s["tool"] == "eco_query_tables")
        second = await client.call_tool("eco_query_tables", step)
        assert second.structured_content["rows"][0][0] == 1
        step2 = next(s["arguments"] for s in second.structured_content["nextSteps"] if s["tool"] == "eco_query_tables")
        assert (await client.call_tool("eco_query_tables", step2)).structured_content["rows"][0][0] == 2

        leaks = ["SELECT pg_get_viewdef(x) AS d FROM range(0,40000) t(x) WHERE pg_get_viewdef(x) LIKE "
                 "'%read_parquet%' LIMIT 1",
                 *(f"SELECT * FROM {name}, (WITH {name} AS (SELECT 1) SELECT 1)"
                   for name in ("sqlite_master", "pg_settings", "duckdb_columns", "pg_views", "pg_proc")),
                 "WITH a AS (SELECT * FROM pg_settings), pg_settings AS (SELECT 1) SELECT * FROM a",
                 "SELECT current_setting('allowed_paths') AS p", "SELECT * FROM duckdb_settings()"]
        for sql in leaks:
            err = assert_error(await call(sql), "invalid_argument")
            assert err["details"]["field"] == "sql"
        for sql in ("SELECT " + "+".join(["1"] * 900) + " AS n",
                    "SELECT " + "(SELECT " * 400 + "1" + ")" * 400 + " AS n"):
            err = assert_error(await call(sql), "invalid_argument")
            assert "tables.query_max_depth" in err["message"] and err["details"]["maxDepth"] == 100

        err = assert_error(await call("SELECT 1", dataset_id=ds_id[:-1]), "not_found")
        assert err["details"]["didYouMean"] == []  # no token: no dataset ids, its own or another's
        after = memory_kb(proc.pid)
    async with caller(url, TOKEN) as own:
        got = await own.call_tool("eco_query_tables", {"dataset_id": ds_id[:-1], "sql": "SELECT 1"})
        assert assert_error(got, "not_found")["details"]["didYouMean"] == [ds_id]  # its own only

    # The server never ran SQL itself: DuckDB was never loaded into it.
    assert "duckdb" not in Path(f"/proc/{proc.pid}/maps").read_text()
    assert after["VmRSS"] - before["VmRSS"] <= 100 * MB, (before, after)
    assert after["VmHWM"] - before["VmHWM"] <= 100 * MB, (before, after)
    for text in texts:
        assert str(store) not in text and str(store.resolve()) not in text and "read_parquet" not in text and "allowed_paths" not in text.replace(
            "current_setting('allowed_paths')", "")
        assert "memory_limit" not in text and "internal_error" not in text


async def test_a_worker_killed_mid_query_gives_a_retryable_answer_and_the_next_query_works(served):
    url, proc, ds_id, _ = served
    async with Client(url, mode="2026-07-28") as client:
        assert not (await client.call_tool("eco_query_tables", {"dataset_id": ds_id, "sql": "SELECT 1 AS one"})).is_error
        long = asyncio.create_task(client.call_tool("eco_query_tables", {
            "dataset_id": ds_id, "sql": "SELECT count(*) AS n FROM range(1000000000000) a"}))
        busy = None
        deadline = time.monotonic() + 60
        while busy is None:  # the worker whose CPU time moves is the one running the query
            assert time.monotonic() < deadline and not long.done(), "no worker ran the query"
            ticks = {pid: _cpu_ticks(pid) for pid in children(proc.pid)}
            await asyncio.sleep(0.5)  # an idle worker uses no CPU at all; the busy one, what the machine gives it
            moved = {pid: _cpu_ticks(pid) - t for pid, t in ticks.items() if Path(f"/proc/{pid}").exists()}
            busy = max(moved, key=lambda p: moved[p]) if moved and max(moved.values()) > 2 else None
        os.kill(busy, signal.SIGKILL)
        err = assert_error(await long, "upstream_unavailable")
        assert err["retryable"] is True and err["details"]["reason"] == "engine_stopped"
        again = await client.call_tool("eco_query_tables", {"dataset_id": ds_id,
                                                            "sql": "SELECT count(*) AS n FROM ST_30_minute"})
        assert not again.is_error and again.structured_content["rows"] == [[5856]]
    assert proc.poll() is None
