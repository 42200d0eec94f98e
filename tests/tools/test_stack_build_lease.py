"""One build per dataset across database and broker restarts (issue 41), with a real Celery worker
and the SDK's MCP client over HTTP:

- PostgreSQL restarted mid-build (a server of the test's own, never the shared one): the build
  holds its lease through the outage (the web answers catalog_unavailable meanwhile, retryable),
  is not recorded dead, is not queued a second time, and completes; every source file is fetched
  once.
- The broker (a Redis of the test's own) restarted after a build was queued, losing its queue: the
  next look at the dataset, a lease later, queues the build again and a worker started afterwards
  builds it, once.
"""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async

from tests.catalog.celery_worker import require_postgres
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.own_postgres import OwnPostgres
from tests.own_redis import OwnRedis
from tests.reliability.conftest import base_env, serve_http
from tests.tools.stack_server_support import (  # noqa: F401  (fixtures)
    LITTER,
    STORAGE,
    Worker,
    broker_at,
    caller,
    rows,
    rows_cleared,
    server_config,
    stack,
    store,
)

pytestmark = pytest.mark.slow

SEL = {"product": LITTER, "site_codes": ["HARV"], "start_month": "2023-06", "end_month": "2023-07"}
# Long enough to ride out the restart; the worker renews it every sixth.
LEASE_S = 20


async def _call(client: Any, args: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(result, None) or (None, error) of one eco_stack_tables call."""
    result = await client.call_tool("eco_stack_tables", args)
    if result.is_error:
        return None, result.structured_content["error"]
    return result.structured_content, None


async def _poll_until(client: Any, dataset_id: str, done: Any, *, seconds: float, why: Any) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        body, err = await _call(client, {"dataset_id": dataset_id})
        assert err is None, err
        assert body is not None and body["state"] in ("building", "ready"), body
        if done(body):
            return body
        assert time.monotonic() < deadline, f"not done after {seconds} s: {body['state']} {body['progress']}; {why()}"
        await asyncio.sleep(0.2)


def _row(url: str, dataset_id: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        cur = conn.execute("SELECT state, attempts, requeues, lease_owner, error FROM tables_dataset "
                           "WHERE dataset_id = %s", [dataset_id])
        names = [c.name for c in cur.description or ()]
        found = cur.fetchone()
    assert found is not None, dataset_id
    return dict(zip(names, found, strict=True))


async def test_a_postgresql_restart_mid_build_keeps_the_one_build_which_completes(fresh_sim, tmp_path):
    pg = OwnPostgres()
    pg.start()
    broker = OwnRedis().start()
    worker: Worker | None = None
    try:
        db_url = pg.create_database(f"eco_lease_{uuid.uuid4().hex[:8]}")
        store_dir = tmp_path / "store"
        token = fresh_sim.issue_token()
        # Each file slow enough that the restart lands while the build downloads.
        fresh_sim.faults.add("latency", route=STORAGE, delay_s=1.0)
        env = {**base_env(fresh_sim, tmp_path / "web-data"), "DATABASE_URL": db_url, "CELERY_BROKER_URL": broker.url,
               "ECO_MCP_SERVER__ALLOW_INSECURE_HEADER_TOKEN": "true",
               "ECO_MCP_TABLES__STORE_DIRECTORY": str(store_dir), "ECO_MCP_TABLES__BUILD_LEASE_S": str(LEASE_S),
               "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"}
        with serve_http(env, tmp_path / "web.log") as web:  # migrates the new database as it starts
            worker = Worker(tmp_path, fresh_sim, broker.url, store_dir, tables__build_lease_s=LEASE_S)
            worker.env["DATABASE_URL"] = db_url
            worker.start().wait_ready()
            async with caller(web.url, token) as client:
                first, err = await _call(client, SEL)
                assert err is None and first is not None and first["state"] == "building", err
                dataset_id = first["datasetId"]
                # Restarted once the worker holds the build and has files still to fetch.
                await _poll_until(client, dataset_id,
                                  lambda b: b["progress"].get("phase") == "downloading"
                                  and 0 < (b["progress"].get("filesDownloaded") or 0) < b["progress"]["filesTotal"],
                                  seconds=180, why=lambda: worker.log()[-3000:] if worker else "")
                pg.restart()
                done = await _poll_until(client, dataset_id, lambda b: b["state"] == "ready", seconds=240,
                                         why=lambda: worker.log()[-3000:] if worker else "")
            row = _row(db_url, dataset_id)
            web_log = web.log.text()
    finally:
        if worker is not None:
            worker.stop()
        broker.kill()
        pg.stop()
    assert done["state"] == "ready" and all(t["rows"] > 0 for t in done["tables"])
    assert row["state"] == "ready" and row["attempts"] == 1 and row["error"] is None, row
    assert "recorded as failed" not in web_log
    # One build: the worker ran the task once, and every source file was fetched once.
    assert worker.log().count("Task tables.build_dataset[") == 2, worker.log()[-3000:]  # received, succeeded
    fetched = fresh_sim.requests.matching(STORAGE)
    assert len(fetched) == len({r.path for r in fetched}) == done["progress"]["filesTotal"]


async def test_a_build_the_broker_lost_is_queued_again_and_a_worker_builds_it_once(
        http_server, sim_cfg, fresh_sim, active_config, store, tmp_path, rows_cleared, settings):
    require_postgres()  # the worker reads the rows the server's threads write
    broker = OwnRedis().start()
    worker: Worker | None = None
    token = fresh_sim.issue_token()
    # The web looks again after a short lease: a build nobody took by then is queued again.
    cfg = active_config(server_config(fresh_sim, store, tables__build_lease_s=2))
    try:
        with broker_at(broker.url, settings), http_server(cfg) as srv:
            async with caller(srv.url, token) as client:
                first = await stack(client, SEL)
                assert first["state"] == "building"
                dataset_id = first["datasetId"]
                # The broker restarts with nothing kept: the queued build is gone.
                broker.restart()
                assert broker.keys() == []
                worker = Worker(tmp_path, fresh_sim, broker.url, store).start().wait_ready()
                done = await _poll_until(client, dataset_id, lambda b: b["state"] == "ready", seconds=240,
                                         why=lambda: worker.log()[-3000:] if worker else "")
    finally:
        if worker is not None:
            worker.stop()
        broker.kill()
    assert all(t["rows"] > 0 for t in done["tables"])
    [row] = await sync_to_async(rows)()
    assert row.state == "ready" and row.attempts == 1 and row.requeues >= 1
    assert worker is not None and "Task tables.build_dataset[" in worker.log()
    # However often it was queued again, one run built it: each source file fetched once.
    fetched = fresh_sim.requests.matching(STORAGE)
    assert len(fetched) == len({r.path for r in fetched}) == done["progress"]["filesTotal"]


async def test_parallel_identical_stack_calls_on_sqlite_share_one_build_and_none_reads_an_outage(fresh_sim, tmp_path):
    """A busy SQLite (another caller's transaction holding the write lock) is waited for: 42 callers
    asking for the same dataset at once all get it, none catalog_unavailable."""
    data = tmp_path / "web-data"
    env = {**base_env(fresh_sim, data), "ECO_MCP_SERVER__ALLOW_INSECURE_HEADER_TOKEN": "true",
           "ECO_MCP_TABLES__STORE_DIRECTORY": str(tmp_path / "store"),
           "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"}
    callers = 42
    tokens = [fresh_sim.issue_token(exp_s=7200 + i) for i in range(callers + 1)]
    with serve_http(env, tmp_path / "web.log") as web:  # no DATABASE_URL: the embedded SQLite
        async with caller(web.url, tokens[-1]) as warm:
            # The catalogs, built once by a first call, so the race is the one on the dataset's row.
            await _call(warm, {**SEL, "end_month": "2023-06"})

        async def one(token: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
            async with caller(web.url, token) as client:
                return await _call(client, SEL)

        answers = await asyncio.gather(*(one(t) for t in tokens[:callers]))
        errors = [err for _, err in answers if err is not None]
        assert errors == [], errors[:3]
        ids = {body["datasetId"] for body, _ in answers if body is not None}
        assert len(ids) == 1
        async with caller(web.url, tokens[0]) as client:
            done = await _poll_until(client, ids.pop(), lambda b: b["state"] == "ready", seconds=240,
                                     why=lambda: web.log.text()[-3000:])
    assert all(t["rows"] > 0 for t in done["tables"])
    import sqlite3

    with sqlite3.connect(data / "eco.sqlite3") as conn:
        [(attempts, state)] = conn.execute("SELECT attempts, state FROM tables_dataset WHERE dataset_id = ?",
                                           [done["datasetId"]]).fetchall()
    assert (attempts, state) == (1, "ready")
