"""The engine worker pool (tables/engine.py) on a stacked dataset: queries run in worker processes
under their limits, each limit's answer names its setting, a worker over a limit or killed is
replaced, a query that waits for a worker past its time is a retryable busy answer, a cancelled
call stops its query, and the rows a worker sends stop at the byte budget."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eco_core.errors import EcoError
from tables import engine, query
from tests.tables.query_support import stack_soil

ONE = engine.Settings(workers=1, memory_mb=768)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    downloads = tmp_path_factory.mktemp("downloads")
    ds_id, _ = stack_soil(downloads)
    yield downloads / "datasets" / ds_id
    engine.pools.close()


def limits(timeout_s: float = 20) -> query.Limits:
    return query.Limits(timeout_s=timeout_s, memory_mb=256, threads=1, max_depth=100, engine_memory_mb=ONE.memory_mb)


def run(folder: Path, sql: str, *, limit: int = 100, timeout_s: float = 20, cpu_s: float = 30,
        budget: int | None = 40000, cancel: threading.Event | None = None) -> query.Result:
    return engine.start(folder, sql, limit, limits(timeout_s), budget=budget, cpu_s=cpu_s, settings=ONE,
                        cancel=cancel).result(timeout=120)


def refused(folder: Path, sql: str, **kw: object) -> EcoError:
    with pytest.raises(EcoError) as got:
        run(folder, sql, **kw)  # type: ignore[arg-type]
    return got.value


def test_a_query_runs_in_a_worker_process_not_in_this_one(folder):
    got = run(folder, "SELECT count(*) AS n, current_date IS NOT NULL AS d FROM ST_30_minute")
    assert got.rows == [[5856, True]] and got.tables[0].name == "ST_30_minute"
    assert got.tables[0].releases == {"RELEASE-2026"} and got.dataset.record["product"] == "DP1.00041.001"
    pids = engine.pools.current.pids()
    assert len(pids) == 1 and pids[0] != os.getpid()


def test_memory_past_the_workers_limit_is_query_too_large_naming_it_and_the_worker_is_replaced(folder):
    err = refused(folder, "SELECT len(range(200000000)) AS n")
    assert err.code == "query_too_large" and err.details["setting"] == "tables.engine_memory_mb"
    assert err.details["limitMb"] == ONE.memory_mb and "768 MB" in err.message
    # the next query is answered
    assert run(folder, "SELECT count(*) AS n FROM sensor_positions").rows == [[3]]


def test_cpu_past_its_limit_kills_the_worker_and_names_tables_query_cpu_s(folder):
    err = refused(folder, "SELECT count(*) FROM range(1000000000000) a", cpu_s=1)
    assert err.code == "query_too_large" and err.details["reason"] == "cpu"
    assert "tables.query_cpu_s" in err.message and err.details["limitSeconds"] == 1
    assert run(folder, "SELECT 2 AS two").rows == [[2]]


def test_wall_time_past_the_limit_is_query_too_large_and_the_worker_answers_the_next(folder):
    err = refused(folder, "SELECT count(*) FROM range(1000000000000) a", timeout_s=1)
    assert err.code == "query_too_large" and err.details["reason"] == "time"
    assert "tables.query_timeout_s" in err.message and "1 s" in err.message
    assert run(folder, "SELECT 3 AS three").rows == [[3]]


def test_a_query_that_finds_every_worker_busy_past_its_time_is_a_retryable_busy_answer(folder):
    run(folder, "SELECT 1 AS warm")
    long = engine.start(folder, "SELECT count(*) FROM range(1000000000000) a", 10, limits(8), budget=None,
                        cpu_s=30, settings=ONE)
    while engine.pools.current._idle and not long.done():
        time.sleep(0.01)  # until the one worker has the long query
    err = refused(folder, "SELECT 1 AS one", timeout_s=0.5)
    assert err.code == "rate_limited" and err.retryable and err.details["reason"] == "engine_busy"
    assert err.details["retryAfterSeconds"] >= 1 and "tables.engine_workers" in err.message
    with pytest.raises(EcoError) as timed_out:
        long.result(timeout=60)
    assert timed_out.value.details["reason"] == "time"


def test_a_cancelled_call_stops_its_query_and_the_worker_serves_on(folder):
    run(folder, "SELECT 1 AS warm")
    pids = engine.pools.current.pids()
    cancel = threading.Event()
    fut = engine.start(folder, "SELECT count(*) FROM range(1000000000000) a", 10, limits(20), budget=None,
                       cpu_s=30, settings=ONE, cancel=cancel)
    time.sleep(0.3)
    cancel.set()
    with pytest.raises(concurrent.futures.CancelledError):
        fut.result(timeout=30)
    assert run(folder, "SELECT 4 AS four").rows == [[4]]
    assert engine.pools.current.pids() == pids  # interrupted, not killed: the same warm worker


def test_rows_stop_at_the_budget_in_the_worker_and_a_lone_large_value_is_cut(folder):
    got = run(folder, "SELECT * FROM ST_30_minute ORDER BY startDateTime", limit=5000, budget=20000)
    assert got.by_bytes and got.more and 0 < len(got.rows) < 5000 and got.total is None
    assert sum(query.row_bytes(r) + 1 for r in got.rows) <= 20000
    one = run(folder, "SELECT 7 AS n, repeat('ab', 100000) AS s", budget=5000)
    assert one.cut == ["s"] and not one.more and one.rows[0][0] == 7
    assert one.rows[0][1].endswith(query.CUT_MARK) and one.rows[0][1].startswith("abab")
    assert query.row_bytes(one.rows[0]) < 5000
    err = refused(folder, "SELECT list(x) AS l FROM range(100000) t(x)", budget=5000)
    assert err.code == "result_too_large" and "limits.max_result_bytes" in err.message


def test_no_path_of_the_server_leaves_a_worker(folder):
    # A value that holds the dataset's folder, however it got there, is not sent as it is.
    got = run(folder, f"SELECT '{folder.resolve()}/x' AS p")
    assert str(folder.resolve()) not in got.rows[0][0] and got.rows[0][0] == "<dataset>/x"


def test_a_worker_killed_while_idle_is_replaced_without_the_caller_noticing(folder):
    import signal

    run(folder, "SELECT 1 AS warm")
    (pid,) = engine.pools.current.pids()
    os.kill(pid, signal.SIGKILL)
    while Path(f"/proc/{pid}/status").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text():
        time.sleep(0.01)
    assert run(folder, "SELECT 5 AS five").rows == [[5]]
    assert pid not in engine.pools.current.pids()


def test_a_worker_holds_no_credential_of_the_servers(folder, monkeypatch):
    monkeypatch.setenv("ECO_TOKEN", "secret-token-of-the-server")
    monkeypatch.setenv("DATABASE_URL", "postgresql://user:pw@db/eco")
    monkeypatch.setenv("SOME_API_KEY", "k")
    engine.pools.close()  # a worker started from now on
    run(folder, "SELECT 1 AS one")
    (pid,) = engine.pools.current.pids()
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    names = {e.split(b"=", 1)[0].decode() for e in env if e}
    assert not names & {"ECO_TOKEN", "DATABASE_URL", "SOME_API_KEY"} and "PATH" in names


def test_a_dataset_being_deleted_is_let_go_by_the_workers_that_have_it_open(folder):
    run(folder, "SELECT 1 AS warm")
    (pid,) = engine.pools.current.pids()
    engine.forget(folder)  # what the store calls (with query.forget) before it deletes the folder
    assert pid not in engine.pools.current.pids()
    assert run(folder, "SELECT count(*) AS n FROM sensor_positions").rows == [[3]]
