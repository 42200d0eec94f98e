"""kill -9 during start-up migrations: `manage.py migrate` on a fresh PostgreSQL database, killed
twice while it applies migrations; the start-up migrate (what the stdio, HTTP and ASGI entry
points run) killed inside its post-migrate work; and the stdio server's own migrate of a fresh
embedded SQLite database, killed during start-up. Each time the next run completes, and the
schema is the one an uninterrupted migrate makes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.reliability.kill9_support import (
    PYTHON,
    REPO,
    clean_env,
    drop_shared,
    fresh_db,
    kill9_and_reap,
    pg_schema,
    query,
    run,
    run_python,
    shared_pg,
    spawn,
    spawn_python,
    wait_until,
)

Node = tuple[str, str]


def _graph() -> Any:
    from django.db.migrations.loader import MigrationLoader

    return MigrationLoader(None, ignore_no_migrations=True).graph


def assert_consistent(applied: list[Node]) -> None:
    """What a killed migrate left is a set Django can continue from: each migration recorded once,
    and only after everything it depends on."""
    graph = _graph()
    assert len(applied) == len(set(applied)), "a migration was recorded twice"
    for node in applied:
        missing = [p.key for p in graph.node_map[node].parents if p.key not in set(applied)]
        assert not missing, f"{node} recorded without {missing}"


# --- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def reference_db(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield shared_pg(postgres_url, tmp_path_factory.mktemp("kill9-shared"))
    drop_shared()


def _applied(url: str) -> list[Node]:
    try:
        return [(a, n) for a, n in query(url, "SELECT app, name FROM django_migrations")]
    except psycopg.errors.UndefinedTable:
        return []


# What every entry point runs at start (eco_service.bootstrap.prepare_database), on its own.
START_UP = ["-c", "import django; django.setup(); from eco_service.bootstrap import prepare_database; "
                  "prepare_database()"]


def _kill_after(url: str, env: dict[str, str], log: Path, at_least: int) -> None:
    proc = spawn(["migrate", "--noinput"], env, log)
    wait_until(lambda: len(_applied(url)) >= at_least, f"{at_least} migrations recorded", alive=proc, log=log)
    kill9_and_reap(proc, log)
    assert_consistent(_applied(url))


def _waiting_insert(url: str, table: str) -> int | None:
    rows = query(url, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                      "AND wait_event_type = 'Lock' AND query ILIKE %s", (f'INSERT INTO "{table}"%',))
    return rows[0][0] if rows else None


@pytest.mark.postgres
def test_migrate_killed_mid_way_and_start_up_killed_in_post_migrate_work_complete_next_time_with_the_uninterrupted_schema(
        postgres_url: str, reference_db: str, tmp_path: Path) -> None:
    total = len(_graph().nodes)
    with fresh_db(postgres_url, "migrate") as url:
        env = clean_env(DATABASE_URL=url, ECO_MCP_DATA_DIR=str(tmp_path / "data"))
        # Killed while applying: after the first migration, then half-way through the rest.
        _kill_after(url, env, tmp_path / "first.log", 1)
        _kill_after(url, env, tmp_path / "half.log", total // 2)
        assert len(_applied(url)) < total

        # Killed after the last migration is recorded, inside the post-migrate hooks (content
        # types, permissions, the catalog's beat schedule): the test holds permission inserts
        # back with a share lock on the table, which no remaining migration touches. This time
        # it is the start-up migrate, which skips its work when no migration is pending.
        assert {n for n in _applied(url) if n[0] == "auth"} == {n for n in _graph().nodes if n[0] == "auth"}
        log = tmp_path / "post-migrate.log"
        with psycopg.connect(url) as holder:
            holder.execute("LOCK TABLE auth_permission IN SHARE MODE")
            proc = spawn_python(START_UP, env, log)
            backend = wait_until(lambda: _waiting_insert(url, "auth_permission"), "the permission inserts",
                                 alive=proc, log=log)
            kill9_and_reap(proc, log)
            holder.rollback()
        wait_until(lambda: not query(url, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)),
                   "the killed migrate's database session ending")
        assert len(_applied(url)) == total
        assert query(url, "SELECT count(*) FROM django_celery_beat_periodictask")[0][0] == 0

        # The next start: the advisory migration lock died with its holder, so it does not wait
        # forever, and it finishes the hooks' work although no migration is pending.
        log = tmp_path / "next-start.log"
        assert run_python(START_UP, env, log) == 0, log.read_text()
        assert run(["migrate", "--check"], env, tmp_path / "check.log") == 0, (tmp_path / "check.log").read_text()
        assert sorted(_applied(url)) == sorted(_graph().nodes)
        assert pg_schema(url) == pg_schema(reference_db)
        # What the post-migrate hooks write exists once, as after an uninterrupted migrate.
        for sql in ("SELECT name FROM django_celery_beat_periodictask",
                    "SELECT app_label, model, codename FROM auth_permission p "
                    "JOIN django_content_type c ON c.id = p.content_type_id",
                    "SELECT app_label, model FROM django_content_type"):
            assert sorted(query(url, sql)) == sorted(query(reference_db, sql)), sql


# --- the stdio start-up path on the embedded SQLite default ---------------------------------------


def _sqlite_applied(db: Path) -> list[Node]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as conn:
            return [(a, n) for a, n in conn.execute("SELECT app, name FROM django_migrations")]
    except sqlite3.OperationalError:  # no table yet, or the migrating process holds the lock
        return []


def _sqlite_schema(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"))


async def test_the_stdio_server_killed_while_it_migrates_its_embedded_database_starts_next_time(
        sim_data_dir: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = clean_env(ECO_MCP_DATA_DIR=str(data))
    log = tmp_path / "stdio.log"
    # stdin stays open: the server would otherwise finish start-up and exit on its own.
    proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio"], cwd=REPO, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    # The start-up migrate is one transaction on SQLite (eco_service.bootstrap): killed a moment
    # into it (a whole run takes about 0.6 s here, longer under load), nothing of it is left.
    try:
        wait_until(lambda: "applying" in log.read_text(), "the start-up migrate", alive=proc, log=log)
        time.sleep(0.2)
        kill9_and_reap(proc, log)
    finally:
        if proc.stdin:
            proc.stdin.close()
    applied = _sqlite_applied(data / "eco.sqlite3")
    assert_consistent(applied)
    # All or nothing: never some migrations recorded, and never a table without its record.
    assert sorted(applied) in ([], sorted(_graph().nodes)), f"{len(applied)} of {len(_graph().nodes)} recorded"

    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)
    async with Client(params, mode="2026-07-28") as client:
        result = await client.call_tool("eco_ping", {})
    assert not result.is_error and result.structured_content["pong"] == "ok"
    assert sorted(_sqlite_applied(data / "eco.sqlite3")) == sorted(_graph().nodes)
    # The reliability suite's data folder was migrated by one uninterrupted `manage.py migrate`.
    assert _sqlite_schema(data / "eco.sqlite3") == _sqlite_schema(sim_data_dir.path / "eco.sqlite3")
