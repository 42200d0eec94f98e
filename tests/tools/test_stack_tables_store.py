"""The dataset store around eco_stack_tables over HTTP, without a worker: with no broker the build
runs in the web process and the call still answers at once; the per-dataset cap is refused before
any byte; a dataset id goes alone and names no path; the ops API and the admin list the store's
datasets (who asked by token hash only) and delete one with its files. stdio keeps its folder."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client as DjangoClient
from django.urls import reverse

from eco_core import config as eco_config
from eco_core.redact import token_hash
from tests.catalog.celery_worker import require_postgres
from tests.downloads.conftest import call_tool, dl_dir, sim_token  # noqa: F401  (fixtures)
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import error_of
from tests.tools.stack_server_support import (  # noqa: F401  (fixtures)
    LITTER,
    STORAGE,
    broker_at,
    caller,
    no_server_path,
    poll,
    rows,
    rows_cleared,
    server_config,
    stack,
    store,
)

SEL = {"product": LITTER, "site_codes": ["HARV"], "start_month": "2023-06", "end_month": "2023-07",
       "tables": ["ltr_pertrap"]}
OPS_TOKEN = "ops-token-for-tests-0123456789"


async def test_without_a_broker_the_build_runs_in_the_web_process_and_the_call_answers_at_once(
        http_server, sim_cfg, fresh_sim, active_config, store, rows_cleared):
    require_postgres()  # the server's threads write rows the test reads
    token = fresh_sim.issue_token()
    cfg = active_config(server_config(fresh_sim, store))
    with http_server(cfg) as srv:
        async with caller(srv.url, token) as client:
            first = await stack(client, SEL)
            assert first["state"] == "building" and first["tables"] == []
            done = await poll(client, first["datasetId"], [])
    assert [t["name"] for t in done["tables"]] == ["ltr_pertrap"] and done["tables"][0]["rows"] > 0
    no_server_path(first, store)
    no_server_path(done, store)
    assert (store / done["datasetId"] / "ltr_pertrap.parquet").is_file()
    [row] = await sync_to_async(rows)()
    assert row.state == "ready" and row.requested_by == token_hash(token) and row.plan == {}


async def test_with_the_broker_unreachable_the_build_runs_in_the_web_process_and_the_answer_says_so(
        http_server, sim_cfg, fresh_sim, active_config, store, rows_cleared, settings, caplog):
    require_postgres()
    token = fresh_sim.issue_token()
    cfg = active_config(server_config(fresh_sim, store))
    # Nothing listens on port 1: Redis, the broker, is down.
    with broker_at("redis://127.0.0.1:1/0", settings), http_server(cfg) as srv:
        async with caller(srv.url, token) as client:
            first = await stack(client, SEL)
            assert first["state"] == "building"
            assert any("build queue is unreachable" in n for n in first["notes"]), first["notes"]
            done = await poll(client, first["datasetId"], [])
    assert [t["name"] for t in done["tables"]] == ["ltr_pertrap"] and done["tables"][0]["rows"] > 0
    assert "redis://" not in json.dumps([first, done])
    [row] = await sync_to_async(rows)()
    assert row.state == "ready" and row.attempts == 1
    assert any("build queue (Celery broker) is unreachable" in r.getMessage() for r in caplog.records)


def test_a_build_goes_to_the_configured_broker_even_after_an_eager_task_made_the_apps_pools(redis_url, settings):
    """Celery's eager tasks acquire a producer too: a test process that ran one holds pools made
    with no broker, and a build sent through them vanished without an error (the two-callers and
    question-to-number tests then waited for ever). broker_at forgets them."""
    import redis

    from eco_service.celery import app
    from tables import store as tables_store

    app.amqp.producer_pool  # noqa: B018  (what an eager task's apply_async makes)
    with broker_at(redis_url, settings):
        queue = app.conf.task_default_queue
        assert tables_store.dispatch("DP1.10033.001.basic.2023-06.2023-07.probe") is None
        r = redis.Redis.from_url(redis_url)
        try:
            assert r.llen(queue) == 1
        finally:
            r.delete(queue)


async def test_the_per_dataset_cap_is_refused_before_any_byte_and_nothing_is_recorded(
        call_tool, fresh_sim, tmp_path):
    fresh_sim.requests.clear()
    out = await call_tool("eco_stack_tables", SEL, transport="http", tables__store_directory=str(tmp_path / "s"),
                          tables__max_bytes_per_dataset=100)
    err = error_of(out, "download_limit_exceeded")
    assert err["details"]["setting"] == "tables.max_bytes_per_dataset" and err["details"]["bytes"] > 100
    assert str(tmp_path) not in json.dumps(err)
    assert fresh_sim.requests.count(STORAGE) == 0 and not (tmp_path / "s").exists()
    assert await sync_to_async(rows)() == []


async def test_a_dataset_id_goes_alone_is_never_a_path_and_an_unknown_one_is_not_found(call_tool, fresh_sim,
                                                                                    tmp_path):
    flags = {"transport": "http", "tables__store_directory": str(tmp_path / "s")}
    error_of(await call_tool("eco_stack_tables", {**SEL, "dataset_id": "a.b"}, **flags), "invalid_argument",
             "dataset_id")
    error_of(await call_tool("eco_stack_tables", {}, **flags), "invalid_argument", "product")
    for bad in ("../etc", ".hidden", "a/b", "a..b"):
        error_of(await call_tool("eco_stack_tables", {"dataset_id": bad}, **flags), "invalid_argument", "dataset_id")
    err = error_of(await call_tool("eco_stack_tables", {"dataset_id": "DP1.10033.001.basic.x"}, **flags),
                   "not_found", "dataset_id")
    assert str(tmp_path) not in json.dumps(err)
    assert fresh_sim.requests.count(STORAGE) == 0


async def test_stdio_still_stacks_into_the_download_directory_and_answers_an_id_from_its_folder(
        call_tool, fresh_sim, dl_dir):
    built = (await call_tool("eco_stack_tables", SEL)).ok
    assert built["state"] == "ready" and built["folder"] == str(dl_dir / "datasets" / built["datasetId"])
    assert "error" not in built  # a result's own key: only an error result has it
    again = (await call_tool("eco_stack_tables", {"dataset_id": built["datasetId"]})).ok
    assert again["folder"] == built["folder"] and again["tables"][0]["rows"] == built["tables"][0]["rows"]
    error_of(await call_tool("eco_stack_tables", {"dataset_id": "DP1.10033.001.basic.none"}), "not_found",
             "dataset_id")


# -- ops API and admin ----------------------------------------------------------------------------

def _dataset(store: Path, dataset_id: str, *, state: str = "ready", size: int = 10, used_minutes_ago: int = 0,
             token: str | None = "caller-token") -> Any:
    from tables.models import Dataset

    folder = store / dataset_id
    folder.mkdir(parents=True)
    (folder / "t.parquet").write_bytes(b"x" * size)
    return Dataset.objects.create(
        dataset_id=dataset_id, product=LITTER, selection={"product": LITTER, "siteCodes": ["HARV"]}, state=state,
        size_bytes=size, requested_by=token_hash(token), plan={"items": [{"url": "https://signed"}]},
        last_used_at=datetime.now(UTC) - timedelta(minutes=used_minutes_ago))


@pytest.fixture
def ops_store(active_config, tmp_path, db) -> Path:
    from tables.models import Dataset

    # Rows an earlier test's server threads committed are not this test's store (rolled back after).
    Dataset.objects.all().delete()
    store = tmp_path / "store"
    active_config(eco_config.load_config(env={"ECO_MCP_SERVER__OPS_TOKEN": OPS_TOKEN,
                                              "ECO_MCP_TABLES__STORE_DIRECTORY": str(store)}, warn=False))
    return store


def test_the_ops_api_lists_the_store_by_last_use_and_deletes_a_dataset_with_its_files(ops_store, client):
    _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.aaaa", used_minutes_ago=30, size=7)
    _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.bbbb", size=5)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {OPS_TOKEN}"}
    assert client.get("/api/ops/datasets").status_code == 401
    listed = client.get("/api/ops/datasets", **auth).json()
    assert [i["datasetId"][-4:] for i in listed["items"]] == ["bbbb", "aaaa"]
    assert listed["total"] == 2 and listed["storeBytes"] == 12 and listed["maxStoreBytes"] > 0
    item = listed["items"][0]
    assert item["requestedBy"] == token_hash("caller-token") and item["sizeBytes"] == 5 and item["state"] == "ready"
    assert {"selection", "lastUsedAt", "progress"} <= set(item) and "plan" not in item
    text = json.dumps(listed)
    assert "caller-token" not in text and str(ops_store) not in text and "signed" not in text
    gone = client.delete("/api/ops/datasets/DP1.10033.001.basic.2023-06.2023-07.aaaa", **auth)
    assert gone.status_code == 200
    assert not (ops_store / "DP1.10033.001.basic.2023-06.2023-07.aaaa").exists()
    assert (ops_store / "DP1.10033.001.basic.2023-06.2023-07.bbbb").is_dir()
    assert client.get("/api/ops/datasets", **auth).json()["total"] == 1
    assert client.delete("/api/ops/datasets/DP1.10033.001.basic.2023-06.2023-07.aaaa", **auth).status_code == 404
    assert client.delete("/api/ops/datasets/..", **auth).status_code == 404
    assert client.get("/api/ops/datasets?state=failed", **auth).json()["items"] == []


def test_the_admin_lists_the_store_and_its_delete_removes_the_files(ops_store):
    from tables.models import Dataset

    staff = DjangoClient()
    staff.force_login(User.objects.create_superuser("admin", password="x"))
    row = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.cccc")
    page = staff.get(reverse("admin:tables_dataset_changelist"))
    assert page.status_code == 200 and "DP1.10033.001.basic.2023-06.2023-07.cccc" in page.content.decode()
    assert token_hash("caller-token") in page.content.decode()
    detail = staff.get(reverse("admin:tables_dataset_change", args=[row.pk])).content.decode()
    assert "signed" not in detail  # the plan's URLs are not shown
    resp = staff.post(reverse("admin:tables_dataset_changelist"),
                      {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
    assert resp.status_code == 302
    assert not Dataset.objects.filter(pk=row.pk).exists()
    assert not (ops_store / "DP1.10033.001.basic.2023-06.2023-07.cccc").exists()


def test_a_build_no_worker_took_is_queued_again_after_half_a_lease_and_reads_failed_after_the_queue_wait(
        ops_store, monkeypatch):
    from tables import store
    from tables.models import Dataset

    sent: list[str] = []
    monkeypatch.setattr(store, "dispatch", lambda dataset_id: sent.append(dataset_id))
    pickup = store.pickup_s()
    assert pickup == eco_config.get_config().tables.build_lease_s / 2 == 30  # within a minute with beat's sweep
    row = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.dddd", state="building", size=0)
    Dataset.objects.filter(pk=row.pk).update(queued_at=datetime.now(UTC) - timedelta(seconds=pickup - 10))
    assert store.lookup(row.dataset_id).state == "building" and sent == []  # not yet: still queued
    Dataset.objects.filter(pk=row.pk).update(queued_at=datetime.now(UTC) - timedelta(seconds=pickup + 5))
    requeued = store.lookup(row.dataset_id)
    assert requeued.state == "building" and requeued.requeues == 1 and sent == [row.dataset_id]
    assert store.lookup(row.dataset_id).requeues == 1 and len(sent) == 1  # once a lease, not once a look
    Dataset.objects.filter(pk=row.pk).update(requeued_at=datetime.now(UTC) - timedelta(seconds=pickup + 5))
    assert store.sweep() == 1 and len(sent) == 2  # beat's sweep finds it too
    Dataset.objects.filter(pk=row.pk).update(queued_at=datetime.now(UTC) - timedelta(seconds=store.QUEUE_WAIT_S + 60))
    lost = store.lookup(row.dataset_id)
    assert lost.state == "failed" and lost.error["message"] == store.LOST
    again, queued = store.claim(row.dataset_id, product=LITTER, selection=row.selection, plan={"items": []},
                                planned_bytes=0, requested_by=token_hash("another"))
    assert queued and again.state == "building" and again.attempts == 2 and again.error is None
    assert again.requested_by == token_hash("caller-token")  # who asked first
    _, queued = store.claim(row.dataset_id, product=LITTER, selection=row.selection, plan={"items": []},
                            planned_bytes=0, requested_by=token_hash("another"))
    assert not queued  # building: the second call shares it


def test_one_run_takes_a_builds_lease_and_the_build_is_dead_only_once_its_lease_ran_out(ops_store):
    from tables import store
    from tables.models import Dataset

    row = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.eeee", state="building", size=0)
    Dataset.objects.filter(pk=row.pk).update(queued_at=datetime.now(UTC))
    assert store.take_lease(row.dataset_id, "worker-a", 30)
    assert not store.take_lease(row.dataset_id, "worker-b", 30)  # a second delivery of the task builds nothing
    held = store.lookup(row.dataset_id)
    assert held.state == "building" and held.lease_owner == "worker-a"
    # A live lease: a call with the selection shares the build, whatever a lock or a read said.
    _, queued = store.claim(row.dataset_id, product=LITTER, selection=row.selection, plan={"items": []},
                            planned_bytes=0, requested_by=token_hash("another"))
    assert not queued
    Dataset.objects.filter(pk=row.pk).update(lease_expires_at=datetime.now(UTC) - timedelta(seconds=1))
    dead = store.lookup(row.dataset_id)
    assert dead.state == "failed" and dead.error["message"] == store.DIED
    again, queued = store.claim(row.dataset_id, product=LITTER, selection=row.selection, plan={"items": []},
                                planned_bytes=0, requested_by=token_hash("another"))
    assert queued and again.lease_owner == "" and again.lease_expires_at is None and again.attempts == 2
    assert store.take_lease(row.dataset_id, "worker-b", 30)


def test_the_store_cap_counts_the_bytes_of_builds_in_flight(ops_store, monkeypatch):
    from tables import store
    from tables.models import Dataset

    active = eco_config.get_config()
    cfg = active.model_copy(update={"tables": active.tables.model_copy(update={"max_store_bytes": 100})})
    monkeypatch.setattr(store, "get_config", lambda: cfg)
    old = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.ffff", size=30, used_minutes_ago=60)
    first, queued = store.claim("DP1.10033.001.basic.2023-06.2023-07.gggg", product=LITTER, selection={},
                                plan={"items": []}, planned_bytes=60, requested_by="a")
    assert queued and Dataset.objects.filter(pk=old.pk).exists()  # 30 ready + 60 in flight fit 100
    # 45 more would not: the least recently used ready dataset goes to make room.
    _, queued = store.claim("DP1.10033.001.basic.2023-06.2023-07.hhhh", product=LITTER, selection={},
                            plan={"items": []}, planned_bytes=35, requested_by="a")
    assert queued and not Dataset.objects.filter(pk=old.pk).exists()
    assert not (ops_store / old.dataset_id).exists()
    # 95 in flight: a third build cannot fit beside them, and nothing is recorded for it.
    with pytest.raises(Exception) as refused:
        store.claim("DP1.10033.001.basic.2023-06.2023-07.iiii", product=LITTER, selection={}, plan={"items": []},
                    planned_bytes=10, requested_by="a")
    err = refused.value
    assert err.code == "download_limit_exceeded" and err.retryable and err.details["inFlightBytes"] == 95
    assert not Dataset.objects.filter(dataset_id="DP1.10033.001.basic.2023-06.2023-07.iiii").exists()
    assert first.planned_bytes == 60


def test_a_ready_dataset_whose_files_are_gone_reads_failed_with_the_reason_and_can_be_built_again(ops_store):
    import shutil

    from families.tables.stack import _ready_record
    from tables import store

    row = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.eeee")
    shutil.rmtree(ops_store / row.dataset_id)
    got, record = _ready_record(eco_config.get_config(), row)
    assert record is None and got.state == "failed" and got.error["message"] == store.MISSING
    assert "tables.store_directory" in got.error["message"] and str(ops_store) not in json.dumps(got.error)
    _, queued = store.claim(row.dataset_id, product=LITTER, selection=row.selection, plan={"items": []},
                            planned_bytes=0, requested_by=token_hash("caller-token"))
    assert queued


def test_eviction_spares_a_dataset_a_query_read_within_the_in_use_window_and_takes_it_after(ops_store):
    from tables import store
    from tables.models import Dataset

    cfg = eco_config.load_config(flags={"tables.store_directory": str(ops_store), "tables.max_store_bytes": 1},
                                 env={}, warn=False)
    old = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.0001", used_minutes_ago=120)
    read = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.0002", used_minutes_ago=60)
    new = _dataset(ops_store, "DP1.10033.001.basic.2023-06.2023-07.0003")
    (ops_store / read.dataset_id / "dataset.json").write_text("{}")
    # A query of `read` starts: the lookup eco_query_tables makes over HTTP touches its last use.
    assert store.ready_folder(read.dataset_id, cfg) == ops_store / read.dataset_id
    assert store.evict(cfg, keep=new.dataset_id) == [old.dataset_id]  # over the cap still: `read` is in use
    assert (ops_store / read.dataset_id).is_dir() and not (ops_store / old.dataset_id).exists()
    past = datetime.now(UTC) - timedelta(seconds=store.in_use_s(cfg) + 1)
    Dataset.objects.filter(pk=read.pk).update(last_used_at=past)
    assert store.evict(cfg, keep=new.dataset_id) == [read.dataset_id]
    assert not (ops_store / read.dataset_id).exists() and (ops_store / new.dataset_id).is_dir()


def test_the_kept_query_engine_of_a_deleted_or_evicted_dataset_is_dropped(ops_store, tmp_path):
    import shutil

    from eco_core.memo import memos
    from tables import query, store
    from tests.tables.query_support import stack_soil

    memos.drop_all()
    limits = query.Limits(timeout_s=20, memory_mb=256, threads=1)

    def kept() -> set[str]:
        return {k[0] for k in query._engines._entries}

    one, _ = stack_soil(tmp_path / "d1", into=ops_store, window=("2024-08", "2024-08"))
    two, _ = stack_soil(tmp_path / "d2", into=ops_store, window=("2024-09", "2024-09"))
    for ds in (one, two):
        assert query.QueryRun(ops_store / ds, "SELECT count(*) FROM ST_30_minute", 1, limits).run().rows[0][0] > 0
    assert kept() == {str(ops_store / one), str(ops_store / two)}
    # Deleted in this process (the ops API, or eviction by a build run here): its engine goes with it.
    store.delete(one, eco_config.get_config())
    assert kept() == {str(ops_store / two)}
    # Removed by another process (the worker evicting it): dropped at the next query of any dataset.
    three, _ = stack_soil(tmp_path / "d3", into=ops_store, window=("2024-10", "2024-10"))
    shutil.rmtree(ops_store / two)
    query.QueryRun(ops_store / three, "SELECT 1", 1, limits).run()
    assert kept() == {str(ops_store / three)}


async def test_a_reused_source_whose_md5_differs_from_the_listing_is_fetched_again(
        http_server, sim_cfg, fresh_sim, active_config, store, rows_cleared):
    """A failed build leaves its sources for the retry; one edited since (same size, other bytes)
    is not NEON's file: the retry fetches it again, and reuses only the files whose MD5 matches."""
    require_postgres()
    token = fresh_sim.issue_token()
    cfg = active_config(server_config(fresh_sim, store))
    sel = {k: v for k, v in SEL.items() if k != "tables"}  # every table: the refused one among them
    with http_server(cfg) as srv:
        async with caller(srv.url, token) as client:
            # One table's files are refused: the build fails after the others landed.
            fresh_sim.faults.add("status", route=r"^/storage/.*ltr_massdata", status=500)
            first = await stack(client, sel)
            failed = await poll(client, first["datasetId"], [], until=("failed",))
            sources = store / ".sources" / first["datasetId"]
            landed = sorted(p for p in sources.rglob("NEON.*.csv") if p.is_file())
            assert landed, failed
            edited = landed[0]
            data = bytearray(edited.read_bytes())
            at = next(i for i in range(len(data) - 1, 0, -1) if chr(data[i]).isdigit())
            data[at] = ord("7") if data[at] != ord("7") else ord("3")
            edited.write_bytes(bytes(data))  # same size, other bytes
            fresh_sim.faults.clear()
            fresh_sim.requests.clear()
            retried = await stack(client, sel)
            assert retried["datasetId"] == first["datasetId"] and retried["state"] == "building"
            done = await poll(client, first["datasetId"], [])
    fetched = {r.path.rsplit("/", 1)[-1] for r in fresh_sim.requests.matching(STORAGE)}
    assert edited.name in fetched
    assert not fetched & {p.name for p in landed[1:]}  # whole and unchanged: reused
    assert done["state"] == "ready" and all(t["rows"] > 0 for t in done["tables"])


def test_beat_sweeps_the_builds_in_progress_every_30_s_after_migrate(db):
    from django_celery_beat.models import PeriodicTask

    from tables.apps import BUILDS_SWEEP_PERIODIC_TASK_NAME
    from tables.tasks import SWEEP_TASK

    entry = PeriodicTask.objects.get(name=BUILDS_SWEEP_PERIODIC_TASK_NAME)
    assert entry.task == SWEEP_TASK and entry.interval.every == 30 and entry.enabled
