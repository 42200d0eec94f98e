"""kill -9 of `manage.py eco_catalog_refresh` mid-build, against the simulator over real sockets,
on real PostgreSQL and on the embedded SQLite default: the previous version of every catalog
stays whole and is what readers see, nothing is left claiming a refresh is under way or holding
the next one up, and the next refresh completes.

Two moments on each database: while the refresh waits for the upstream (the simulator holds a
catalog request, which its request log shows arrived), and inside the swap transaction, after
it deleted the old rows: on PostgreSQL its INSERT waits on a row of the same name the test has
not committed; on SQLite it cannot commit while the test holds a read transaction open.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.reliability.kill9_support import (
    drop_shared,
    kill9_and_reap,
    query,
    refresh_json,
    run,
    run_python,
    shared_pg,
    sim_env,
    spawn,
    spawn_python,
    wait_until,
    warm_sqlite_copy,
)

TABLES = {"products": ("catalog_product", "catalog_productsiteavailability"), "sites": ("catalog_site",),
          "releases": ("catalog_release",), "locations": ("catalog_location",)}
COLUMNS = ("name, location_type, description, domain_code, site_code, parent, latitude, longitude, elevation, "
           "utm_easting, utm_northing, utm_zone, utm_hemisphere")
Rows = Callable[[str], list[tuple[Any, ...]]]


def snapshot(rows: Rows, catalogs: tuple[str, ...]) -> dict[str, Any]:
    """Each catalog's state row and, per table, how many rows and which ones (by primary key: a
    rebuilt table has new keys even when the simulator sends the same records), and the log."""
    wanted = ", ".join(f"'{c}'" for c in catalogs)
    states = {r[0]: r[1:] for r in rows("SELECT catalog, version, row_count, refreshed_at, last_error, "
                                        f"last_attempt_at FROM catalog_catalogstate WHERE catalog IN ({wanted})")}
    tables = {}
    for c in catalogs:
        for t in TABLES[c]:
            ids = [r[0] for r in rows(f"SELECT id FROM {t} ORDER BY id")]
            tables[t] = (len(ids), hashlib.md5(repr(ids).encode()).hexdigest())
    log = rows("SELECT count(*), sum(CASE WHEN ok THEN 1 ELSE 0 END) FROM catalog_catalogrefresh")[0]
    return {"states": states, "tables": tables, "refresh_log": tuple(log)}


def assert_whole(snap: dict[str, Any]) -> None:
    """Every catalog is served: built, no error recorded, and its row count is its table's."""
    for catalog, (version, row_count, refreshed_at, last_error, _) in snap["states"].items():
        assert version >= 1 and refreshed_at is not None and last_error == "", catalog
        assert snap["tables"][TABLES[catalog][0]][0] == row_count > 0, catalog


def assert_rebuilt(before: dict[str, Any], after: dict[str, Any], log: Path) -> None:
    """The refresh that followed the kills swapped in a new version of each catalog it was given."""
    assert_whole(after)
    outcomes = {o["catalog"]: o for o in refresh_json(log)["catalogs"]}
    for catalog, state in before["states"].items():
        assert outcomes[catalog]["ok"] and outcomes[catalog]["version"] == state[0] + 1, catalog
        assert after["states"][catalog][0] == state[0] + 1, catalog
        for table in TABLES[catalog]:
            assert after["tables"][table][1] != before["tables"][table][1], f"{table} was not rebuilt"
    # The killed runs logged nothing; the completed one logged one success per catalog.
    n = len(before["states"])
    assert after["refresh_log"] == (before["refresh_log"][0] + n, before["refresh_log"][1] + n)


def _kill_while_fetching(sim: Any, route: str, args: list[str], env: dict[str, str], log: Path) -> None:
    """The simulator holds the first request on `route`; the refresh is killed once it arrived."""
    sim.faults.add("latency", route=route, count=1, delay_s=60)
    proc = spawn(["eco_catalog_refresh", "--json", *args], env, log)
    wait_until(lambda: sim.requests.count(route) >= 1, f"the refresh's request on {route}", alive=proc, log=log)
    kill9_and_reap(proc, log)
    sim.faults.clear()


# --- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_db(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield shared_pg(postgres_url, tmp_path_factory.mktemp("kill9-shared"))
    drop_shared()


def _backend_waiting_on(url: str, statement: str) -> int | None:
    rows = query(url, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                      "AND wait_event_type = 'Lock' AND query ILIKE %s", (statement + "%",))
    return rows[0][0] if rows else None


@pytest.mark.postgres
def test_on_postgres_a_refresh_killed_in_its_swap_or_its_fetch_leaves_each_catalog_whole_and_the_next_completes(
        pg_db: str, fresh_sim: Any, tmp_path: Path) -> None:
    catalogs = ("releases", "locations")  # the two cheap to build; products and sites swap the same way
    only = [arg for c in catalogs for arg in ("--catalog", c)]
    env = sim_env(fresh_sim, DATABASE_URL=pg_db, ECO_MCP_DATA_DIR=str(tmp_path / "data"))
    assert run(["eco_catalog_refresh", *only], env, tmp_path / "build.log") == 0, (tmp_path / "build.log").read_text()

    # The witness of the old version: one location renamed, so the new build's copy of that row
    # (the simulator's name) is an insert the test can hold up with an uncommitted row of the same
    # name. The refresh then waits inside its swap transaction, its DELETE of every old row done.
    [(name,)] = query(pg_db, "UPDATE catalog_location SET name = name || '~old' "
                             "WHERE id = (SELECT max(id) FROM catalog_location) RETURNING name")

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return query(pg_db, sql)

    before = snapshot(rows, catalogs)
    assert_whole(before)
    with psycopg.connect(pg_db) as holder:
        holder.execute(f"INSERT INTO catalog_location ({COLUMNS}) SELECT %s, {COLUMNS.split(', ', 1)[1]} "
                       "FROM catalog_location WHERE name = %s", (name.removesuffix("~old"), name))
        log = tmp_path / "swap.log"
        proc = spawn(["eco_catalog_refresh", "--json", "--catalog", "locations"], env, log)
        backend = wait_until(lambda: _backend_waiting_on(pg_db, 'INSERT INTO "catalog_location"'),
                             "the refresh's INSERT waiting on the held name", alive=proc, log=log)
        assert snapshot(rows, catalogs) == before  # what it deleted is still there for every reader
        kill9_and_reap(proc, log)
        holder.rollback()
    # The dead client's backend finishes its statement, finds nobody to answer and rolls back.
    wait_until(lambda: not query(pg_db, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)),
               "the killed refresh's database session ending")
    assert snapshot(rows, catalogs) == before

    _kill_while_fetching(fresh_sim, r"^/api/v0/releases", only, env, tmp_path / "fetch.log")
    assert snapshot(rows, catalogs) == before

    log = tmp_path / "after.log"
    assert run(["eco_catalog_refresh", "--json", *only], env, log) == 0, log.read_text()
    assert_rebuilt(before, snapshot(rows, catalogs), log)


# --- the embedded SQLite default -----------------------------------------------------------------


def test_on_embedded_sqlite_a_refresh_killed_in_its_fetch_or_its_swap_leaves_every_catalog_whole_and_the_next_completes(
        sim_data_dir: Any, fresh_sim: Any, tmp_path: Path) -> None:
    db, env = warm_sqlite_copy(sim_data_dir, tmp_path)

    def rows(sql: str) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(db, timeout=30)) as conn:  # read-write: a hot journal is rolled back first
            return list(conn.execute(sql))

    before = snapshot(rows, tuple(TABLES))
    assert_whole(before)

    # While fetching: the simulator holds the GraphQL request for products and sites.
    _kill_while_fetching(fresh_sim, r"^/graphql", [], env, tmp_path / "fetch.log")
    assert snapshot(rows, tuple(TABLES)) == before

    # Inside its swap: the test's open read transaction keeps SQLite from letting the refresh
    # commit, so once its rollback journal appears it has changed the database file's pages in
    # a transaction that cannot end; that is when it is killed. (SQLite cannot commit a lone
    # DELETE either while the reader holds on, so unlike PostgreSQL's this case shows the
    # journal's recovery, not the swap's atomicity.)
    journal = db.with_name(db.name + "-journal")
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT count(*) FROM catalog_location").fetchall()
        log = tmp_path / "swap.log"
        proc = spawn(["eco_catalog_refresh", "--json", "--catalog", "locations"], env, log)
        wait_until(journal.exists, "the refresh's rollback journal", alive=proc, log=log)
        kill9_and_reap(proc, log)
        assert journal.exists()  # left by the dead writer, its transaction never ended
        assert snapshot(lambda sql: holder.execute(sql).fetchall(), tuple(TABLES)) == before
        holder.execute("COMMIT")
    finally:
        holder.close()
    assert snapshot(rows, tuple(TABLES)) == before

    log = tmp_path / "after.log"
    assert run(["eco_catalog_refresh", "--json", "--catalog", "locations"], env, log) == 0, log.read_text()
    after = snapshot(rows, tuple(TABLES))
    assert not journal.exists()  # the next writer's own commit does away with the dead one's
    assert_rebuilt({**before, "states": {"locations": before["states"]["locations"]}}, after, log)
    assert {c: s for c, s in after["states"].items() if c != "locations"} == {
        c: s for c, s in before["states"].items() if c != "locations"}



# --- the ops API's refresh record (in Redis): a killed run does not read "running" for good --------

# The ops API's queued state, then the run (what a Celery worker or the web process's thread does).
OPS_RUN = ("import sys, django; django.setup(); from eco_service.tasks import now_iso, run_refresh, save_state; "
           "rid = sys.argv[1]; save_state({'id': rid, 'state': 'queued', 'catalogs': ['releases'], 'source': None, "
           "'runner': 'in_process', 'requestedAt': now_iso(), 'finishedAt': None, 'outcomes': [], 'error': None}); "
           "run_refresh(rid)")
# What GET /api/ops/refreshes/{id} answers (eco_service.ops_api reads it with load_state).
OPS_READ = ("import json, sys, django; django.setup(); from eco_service.tasks import load_state; "
            "print(json.dumps(load_state(sys.argv[1])))")


def _raw_state(redis_url: str, prefix: str, rid: str) -> dict[str, Any] | None:
    """The record as stored (Django's Redis cache: `<prefix>:1:<key>`, pickled), read without Django."""
    import pickle

    import redis

    with closing(redis.Redis.from_url(redis_url)) as r:
        raw = r.get(f"{prefix}:1:eco:ops:refresh:{rid}")
    return None if raw is None else pickle.loads(raw)


def _read_state(env: dict[str, str], rid: str, log: Path) -> dict[str, Any]:
    assert run_python(["-c", OPS_READ, rid], env, log) == 0, log.read_text()
    return json.loads(log.read_text().strip().splitlines()[-1])


def _ops_run_killed_then_read(sim: Any, env: dict[str, str], redis_url: str, tmp_path: Path) -> None:
    import uuid

    prefix, rid = env["ECO_MCP_CACHE_PREFIX"], uuid.uuid4().hex
    route = r"^/api/v0/releases"
    sim.faults.add("latency", route=route, count=1, delay_s=60)
    log = tmp_path / "ops-run.log"
    proc = spawn_python(["-c", OPS_RUN, rid], env, log)
    try:
        wait_until(lambda: sim.requests.count(route) >= 1 and (_raw_state(redis_url, prefix, rid) or {}).get("state")
                   == "running", "the ops refresh running, its request held", alive=proc, log=log)
        # While its process lives, the record is read as it is: running.
        assert _read_state(env, rid, tmp_path / "read-live.log")["state"] == "running"
        kill9_and_reap(proc, log)
    finally:
        if proc.poll() is None:
            kill9_and_reap(proc)
        sim.faults.clear()
    assert _raw_state(redis_url, prefix, rid)["state"] == "running"  # nothing could clear it

    seen = _read_state(env, rid, tmp_path / "read-dead.log")
    assert seen["state"] == "failed" and seen["finishedAt"]
    assert "ended before it finished" in seen["error"]
    stored = _raw_state(redis_url, prefix, rid)
    assert stored is not None and stored["state"] == "failed"  # recorded, not only answered


@pytest.fixture
def ops_cache(redis_url: str) -> Iterator[str]:
    """A cache key prefix of the test's own in the Redis the processes share; its keys go at the end."""
    import uuid

    import redis

    prefix = f"kill9-ops-{uuid.uuid4().hex[:8]}"
    yield prefix
    with closing(redis.Redis.from_url(redis_url)) as r:
        for key in r.scan_iter(f"{prefix}:*"):
            r.delete(key)


def test_on_embedded_sqlite_an_ops_refresh_killed_mid_run_is_read_as_failed_once_its_lock_is_free(
        sim_data_dir: Any, fresh_sim: Any, tmp_path: Path, redis_url: str, ops_cache: str) -> None:
    _, env = warm_sqlite_copy(sim_data_dir, tmp_path)
    env = {**env, "DJANGO_SETTINGS_MODULE": "eco_service.settings", "REDIS_URL": redis_url,
           "ECO_MCP_CACHE_PREFIX": ops_cache}
    _ops_run_killed_then_read(fresh_sim, env, redis_url, tmp_path)


@pytest.mark.postgres
def test_on_postgres_an_ops_refresh_killed_mid_run_is_read_as_failed_once_its_lock_is_free(
        pg_db: str, fresh_sim: Any, tmp_path: Path, redis_url: str, ops_cache: str) -> None:
    env = sim_env(fresh_sim, DATABASE_URL=pg_db, ECO_MCP_DATA_DIR=str(tmp_path / "data"), REDIS_URL=redis_url,
                  ECO_MCP_CACHE_PREFIX=ops_cache)
    _ops_run_killed_then_read(fresh_sim, env, redis_url, tmp_path)
