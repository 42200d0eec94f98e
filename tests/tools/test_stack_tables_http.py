"""eco_stack_tables over HTTP, through the SDK's MCP client, with PostgreSQL, Redis as the broker and
a real Celery worker building into the server's dataset store: callers asking for the same stack
share one build, polling by dataset_id sees progress then the result, the store evicts its least
recently used dataset past its cap, and a worker killed mid-build leaves the dataset failed until a
call with the selection builds it again. No answer holds a server path."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pyarrow.parquet as pq
import pytest
from asgiref.sync import sync_to_async

from eco_core.redact import token_hash
from tests.downloads.conftest import sim_token  # noqa: F401  (fixture)
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.stack_server_support import (  # noqa: F401  (fixtures)
    LITTER,
    STORAGE,
    Worker,
    broker,
    caller,
    in_another_connection,
    no_server_path,
    poll,
    rows,
    rows_cleared,
    server_config,
    stack,
    store,
)

pytestmark = pytest.mark.slow

SEL = {"product": LITTER, "site_codes": ["HARV"], "start_month": "2023-06", "end_month": "2023-07"}
OTHER = {**SEL, "tables": ["ltr_pertrap"]}
THIRD = {**SEL, "tables": ["ltr_massdata"]}


async def test_two_callers_share_one_build_and_polling_sees_progress_then_the_result(
        http_server, sim_cfg, fresh_sim, active_config, broker, store, tmp_path, rows_cleared):
    tokens = [fresh_sim.issue_token(), fresh_sim.issue_token()]
    worker = Worker(tmp_path, fresh_sim, broker, store).start().wait_ready()
    cfg = active_config(server_config(fresh_sim, store))
    # Each file slow enough that the build is seen on its way.
    fresh_sim.faults.add("latency", route=STORAGE, delay_s=0.4)
    try:
        with http_server(cfg) as srv:
            async with caller(srv.url, tokens[0]) as one, caller(srv.url, tokens[1]) as two:
                assert "eco_stack_tables" in {t.name for t in (await one.list_tools()).tools}
                first, second = await asyncio.gather(stack(one, SEL), stack(two, SEL))
                assert first["state"] == second["state"] == "building"
                assert first["datasetId"] == second["datasetId"]
                for body in (first, second):
                    no_server_path(body, store)
                    assert body["nextSteps"][0]["arguments"] == {"dataset_id": body["datasetId"], "wait_seconds": 20}
                seen: list[dict[str, Any]] = [first, second]
                done = await poll(two, first["datasetId"], seen, worker=worker)
                del seen[:2]
                again = await stack(one, SEL)  # the selection again: answered from the store
    finally:
        worker.stop()
    # Built by the worker process, once: its log shows the one task.
    assert worker.log().count("Task tables.build_dataset[") == 2  # received, then succeeded
    building = [b for b in seen if b["state"] == "building"]
    assert any(0 < (b["progress"]["filesDownloaded"] or 0) < b["progress"]["filesTotal"] for b in building), \
        [b["progress"] for b in building]
    done_counts = [b["progress"]["filesDownloaded"] or 0 for b in seen]
    assert done_counts == sorted(done_counts)
    assert done["progress"]["phase"] == "ready" and done["progress"]["filesDownloaded"] == done["progress"]["filesTotal"]
    # Ready: the totals are the build's, as its progress says (they read 0 files and 0 bytes).
    totals, prog = done["totals"], done["progress"]
    assert (totals["sourceFiles"], totals["downloaded"], totals["bytesTransferred"]) == (
        prog["filesTotal"], prog["filesDownloaded"], prog["bytesDownloaded"]) and totals["bytesTransferred"] > 0
    # Ready: the dataset's next step is a query of it, then its dictionary.
    assert [s["tool"] for s in done["nextSteps"]] == ["eco_query_tables", "eco_describe_tables"]
    assert done["nextSteps"][0]["arguments"]["dataset_id"] == done["datasetId"]
    # One set of downloads for both callers: every source file fetched once, by the worker, tokenless.
    fetched = fresh_sim.requests.matching(STORAGE)
    assert len(fetched) == len({r.path for r in fetched}) == done["progress"]["filesTotal"]
    assert all("x-api-token" not in r.headers for r in fetched)
    listings = fresh_sim.requests.matching(r"^/api/v0/data/")
    assert listings and {r.headers.get("x-api-token") for r in listings} <= set(tokens)
    assert {t["name"] for t in done["tables"]} >= {"ltr_massdata", "ltr_pertrap"}
    assert all(t["rows"] > 0 for t in done["tables"]) and done["citations"]
    folder = store / done["datasetId"]
    for t in done["tables"]:
        assert pq.read_metadata(folder / t["file"]).num_rows == t["rows"]
    assert not (store / ".sources" / done["datasetId"]).exists()
    assert again["state"] == "ready" and any("answered from the server's store" in n for n in again["notes"])
    for body in (*seen, again):
        no_server_path(body, store)
    [row] = await sync_to_async(rows)()
    assert row.requested_by in {token_hash(t) for t in tokens} and row.size_bytes > 0 and row.attempts == 1
    assert all(t not in json.dumps([row.selection, row.progress, row.plan, row.error]) for t in tokens)


async def test_a_worker_killed_mid_build_leaves_the_dataset_failed_and_a_retry_completes_it(
        http_server, sim_cfg, fresh_sim, active_config, broker, store, tmp_path, rows_cleared):
    token = fresh_sim.issue_token()
    # A short lease: the killed build is known dead once it runs out (a live one renews it).
    worker = Worker(tmp_path, fresh_sim, broker, store, tables__build_lease_s=6).start().wait_ready()
    cfg = active_config(server_config(fresh_sim, store))
    # Every file after the first few holds its request: the worker is mid-build when killed.
    fresh_sim.faults.add("latency", route=STORAGE, count=3, delay_s=0.05)
    fresh_sim.faults.add("hang", route=STORAGE, hold_s=600)
    try:
        with http_server(cfg) as srv:
            async with caller(srv.url, token) as client:
                first = await stack(client, SEL)
                seen: list[dict[str, Any]] = []
                sources = store / ".sources" / first["datasetId"]

                def landed() -> set[str]:
                    return {p.name for p in sources.rglob("NEON.*") if p.is_file() and not p.name.endswith(".part")}

                deadline = asyncio.get_running_loop().time() + 120
                # Killed once the files before the held ones are in and the rest are held mid-transfer.
                while not (seen and seen[-1]["progress"]["phase"] == "downloading" and len(landed()) == 3):
                    assert asyncio.get_running_loop().time() < deadline, (seen[-1:], landed())
                    seen.append(await stack(client, {"dataset_id": first["datasetId"]}))
                    await asyncio.sleep(0.2)
                worker.kill()
                before = landed()
                failed = await poll(client, first["datasetId"], seen, until=("failed",), seconds=60)
                assert failed["buildError"]["code"] == "internal_error" and "killed" in failed["buildError"]["message"]
                assert failed["nextSteps"][0]["tool"] == "eco_stack_tables"
                retry_args = failed["nextSteps"][0]["arguments"]
                fresh_sim.faults.clear()
                fresh_sim.requests.clear()
                worker.start()
                retried = await stack(client, retry_args)
                assert retried["state"] == "building" and retried["datasetId"] == first["datasetId"]
                done = await poll(client, first["datasetId"], seen)
    finally:
        worker.stop()
    assert done["state"] == "ready" and all(t["rows"] > 0 for t in done["tables"])
    # The retry fetched only what had not landed before the kill.
    refetched = {r.path.rsplit("/", 1)[-1] for r in fresh_sim.requests.matching(STORAGE)}
    assert len(before) == 3 and not refetched & before
    assert len(refetched) + len(before) == done["progress"]["filesTotal"]
    folder = store / done["datasetId"]
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    [row] = await sync_to_async(rows)()
    assert row.state == "ready" and row.attempts == 2
    for body in (*seen, failed, retried):
        no_server_path(body, store)


async def test_the_store_evicts_its_least_recently_used_dataset_past_its_cap(
        http_server, sim_cfg, fresh_sim, active_config, broker, store, tmp_path, rows_cleared, django_db_blocker):
    token = fresh_sim.issue_token()
    worker = Worker(tmp_path, fresh_sim, broker, store).start().wait_ready()
    cfg = active_config(server_config(fresh_sim, store))
    try:
        with http_server(cfg) as srv:
            async with caller(srv.url, token) as client:
                ids = {}
                sizes = {}
                for name, sel in (("a", SEL), ("b", OTHER), ("c", THIRD)):
                    ids[name] = (await stack(client, sel))["datasetId"]
                    await poll(client, ids[name], [])
                by_id = {r.dataset_id: r for r in await sync_to_async(rows)()}
                sizes = {name: by_id[i].size_bytes for name, i in ids.items()}
                assert all(sizes.values())
                # The cap now holds a and b but not c as well: c, built again, must evict one.
                from tables import store as store_mod

                assert await sync_to_async(store_mod.delete)(ids["c"], cfg)
                worker.stop()
                worker = Worker(tmp_path, fresh_sim, broker, store,
                                tables__max_store_bytes=sum(sizes.values()) - 1).start()
                # a used after b, both longer ago than a query can run (store.in_use_s): b is the least
                # recently used and nothing is in use.
                def backdate() -> None:
                    from tables.models import Dataset

                    for name, hours in (("a", 1), ("b", 2)):
                        Dataset.objects.filter(dataset_id=ids[name]).update(
                            last_used_at=store_mod.now() - timedelta(hours=hours))

                in_another_connection(django_db_blocker, backdate)
                again = await stack(client, THIRD)
                assert again["datasetId"] == ids["c"] and again["state"] == "building"
                await poll(client, ids["c"], [])
                gone = await client.call_tool("eco_stack_tables", {"dataset_id": ids["b"]})
                assert gone.is_error and gone.structured_content["error"]["code"] == "not_found"
                assert (await stack(client, {"dataset_id": ids["a"]}))["state"] == "ready"
    finally:
        worker.stop()
    left = {r.dataset_id: r.state for r in await sync_to_async(rows)()}
    assert left == {ids["a"]: "ready", ids["c"]: "ready"}
    assert not (store / ids["b"]).exists() and (store / ids["a"]).is_dir() and (store / ids["c"]).is_dir()
