"""kill -9 of a location subtree walk (catalog.services.location_subtrees) in the middle of its
sites, against the simulator over real sockets: the previous subtrees stay whole and served, and
the next walk runs at once. A killed walk leaves its progress claim (`progress_at`) behind, as
nothing can clear it; the walk's real claim is its run lock, which died with the process, so the
next walk does not wait the ten minutes the timestamp alone used to hold it up for.

Two walks are killed: `eco_catalog_refresh --catalog subtrees` on PostgreSQL (the session's
advisory lock, seen in pg_locks while the walk runs and gone once the server ended the dead
session), and the background walk an HTTP server's prewarm starts on the embedded SQLite default
(its flock beside the database), which /readyz reports as under way while still answering ready.
The simulator holds the second site's request; the walk is killed once that request arrived.
Three sites each, so every walk is short.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from catalog.services.run_lock import advisory_key
from tests.reliability.conftest import free_port
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
    wait_until,
    warm_sqlite_copy,
)

Rows = Callable[[str], list[tuple[Any, ...]]]
WALK = ["eco_catalog_refresh", "--json", "--catalog", "subtrees"]
# The locations catalog cut down to the given SITE rows, then their subtrees walked once: the
# previous version the killed walk must leave whole.
BUILD = ("import sys, django; django.setup(); from django.core.management import call_command; "
         "from catalog.models import LocationRow; call_command('eco_catalog_refresh', '--catalog', 'locations'); "
         "LocationRow.objects.filter(location_type='SITE').exclude(name__in=sys.argv[1:]).delete(); "
         "call_command('eco_catalog_refresh', '--catalog', 'subtrees')")


def three_sites(sim: Any) -> list[str]:
    return sorted(sim.world.sites)[:3]  # the walk's order: sorted


def snapshot(rows: Rows) -> dict[str, Any]:
    """The stored subtrees (which rows, by primary key), their state and the refresh log."""
    [state] = rows("SELECT version, row_count, refreshed_at, last_error, last_attempt_at, rest_base "
                   "FROM catalog_catalogstate WHERE catalog = 'subtrees'")
    ids = [r[0] for r in rows("SELECT id FROM catalog_location_node ORDER BY id")]
    log = rows("SELECT count(*), sum(CASE WHEN ok THEN 1 ELSE 0 END) FROM catalog_catalogrefresh "
               "WHERE catalog = 'subtrees'")[0]
    return {"state": state, "nodes": (len(ids), hashlib.md5(repr(ids).encode()).hexdigest()), "log": tuple(log)}


def progress(rows: Rows) -> tuple[Any, ...]:
    return rows("SELECT progress_done, progress_total, progress_at FROM catalog_catalogstate "
                "WHERE catalog = 'subtrees'")[0]


def assert_whole(snap: dict[str, Any]) -> None:
    version, row_count, refreshed_at, last_error, _, _ = snap["state"]
    assert version >= 1 and refreshed_at is not None and last_error == ""
    assert snap["nodes"][0] == row_count > 3


def assert_next_walk_completes(before: dict[str, Any], rows: Rows, log: Path) -> None:
    [outcome] = refresh_json(log)["catalogs"]
    assert outcome["ok"] and outcome["version"] == before["state"][0] + 1, outcome
    after = snapshot(rows)
    assert_whole(after)
    assert after["nodes"][0] == before["nodes"][0] and after["nodes"][1] != before["nodes"][1]  # rebuilt
    assert after["log"] == (before["log"][0] + 1, before["log"][1] + 1)  # the killed walk logged nothing
    assert progress(rows)[0::2] == (3, None)  # finished: no claim left


def hold_second_site(sim: Any, sites: list[str]) -> str:
    route = f"^/api/v0/locations/{sites[1]}$"
    sim.faults.add("latency", route=route, count=1, delay_s=60)
    return route


# --- PostgreSQL: the command -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_db(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield shared_pg(postgres_url, tmp_path_factory.mktemp("kill9-shared"))
    drop_shared()


def _advisory_holders(url: str) -> int:
    key = advisory_key("subtrees")
    hi, lo = (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF
    return query(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                      "AND classid::bigint = %s AND objid::bigint = %s", (hi, lo))[0][0]


@pytest.mark.postgres
def test_on_postgres_a_subtree_walk_killed_between_sites_leaves_the_subtrees_whole_and_the_next_walk_runs_at_once(
        pg_db: str, fresh_sim: Any, tmp_path: Path) -> None:
    sites = three_sites(fresh_sim)
    env = sim_env(fresh_sim, DATABASE_URL=pg_db, ECO_MCP_DATA_DIR=str(tmp_path / "data"))
    assert run_python(["-c", BUILD, *sites], env, tmp_path / "build.log") == 0, (tmp_path / "build.log").read_text()

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return query(pg_db, sql)

    before = snapshot(rows)
    assert_whole(before)
    route = hold_second_site(fresh_sim, sites)
    log = tmp_path / "killed.log"
    proc = spawn(WALK, env, log)
    wait_until(lambda: fresh_sim.requests.count(route) >= 1 and progress(rows)[0] == 1,
               f"the walk's request for {sites[1]}, one site done", alive=proc, log=log)
    assert _advisory_holders(pg_db) == 1  # the walk's claim, held by its own session
    kill9_and_reap(proc, log)
    fresh_sim.faults.clear()

    assert snapshot(rows) == before
    done, total, claimed_at = progress(rows)
    assert (done, total) == (1, 3) and claimed_at is not None  # the dead walk's claim, as it left it
    wait_until(lambda: _advisory_holders(pg_db) == 0, "the server ending the killed walk's session")

    log = tmp_path / "after.log"
    assert run(WALK, env, log) == 0, log.read_text()
    assert_next_walk_completes(before, rows, log)


# --- the embedded SQLite default: the HTTP server's background walk ----------------------------------


def test_on_embedded_sqlite_the_prewarm_walk_killed_with_its_server_leaves_the_subtrees_whole_and_the_next_runs(
        sim_data_dir: Any, fresh_sim: Any, tmp_path: Path) -> None:
    sites = three_sites(fresh_sim)
    db, env = warm_sqlite_copy(sim_data_dir, tmp_path)

    def rows(sql: str) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(db, timeout=30)) as conn, conn:
            return list(conn.execute(sql))

    keep = ", ".join(f"'{s}'" for s in sites)
    rows(f"DELETE FROM catalog_location WHERE location_type = 'SITE' AND name NOT IN ({keep})")
    assert run(["eco_catalog_refresh", "--catalog", "subtrees"], env, tmp_path / "build.log") == 0, (
        tmp_path / "build.log").read_text()
    # The four catalogs fresh, the subtrees past their TTL: what a start's prewarm walks.
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S")
    rows(f"UPDATE catalog_catalogstate SET refreshed_at = '{now}' WHERE catalog <> 'subtrees'")
    rows("UPDATE catalog_catalogstate SET refreshed_at = '2000-01-01 00:00:00' WHERE catalog = 'subtrees'")
    before = snapshot(rows)
    assert_whole(before)

    route = hold_second_site(fresh_sim, sites)
    port = free_port()
    log = tmp_path / "server.log"
    proc = spawn(["eco_mcp", "--transport", "http", "--bind-port", str(port)], {
        **env, "ECO_MCP_CACHE__PREWARM": "true", "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}, log)
    wait_until(lambda: fresh_sim.requests.count(route) >= 1 and progress(rows)[0] == 1,
               f"the prewarm walk's request for {sites[1]}, one site done", alive=proc, log=log)
    ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=30)
    assert ready.status_code == 200, ready.text  # the walk under way holds nothing up
    walk = ready.json()["subtrees"]
    assert (walk["refreshing"], walk["sitesDone"], walk["sitesTotal"], walk["stale"]) == (True, 1, 3, True)
    kill9_and_reap(proc, log)
    fresh_sim.faults.clear()
    assert "subtrees: 1/3 sites walked" in log.read_text()  # its progress, on the server's stderr

    assert snapshot(rows) == before
    assert progress(rows)[:2] == (1, 3) and progress(rows)[2] is not None  # the dead walk's claim
    log = tmp_path / "after.log"
    assert run(WALK, env, log) == 0, log.read_text()
    assert_next_walk_completes(before, rows, log)
