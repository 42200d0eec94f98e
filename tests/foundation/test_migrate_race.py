"""Start-up is safe in a fleet: processes started together on one fresh database serialize the
automatic migrate (and `manage.py migrate`) behind a database-wide lock, and compose migrates
once, in a one-shot service, before any replica starts.

Without the lock two processes on a fresh PostgreSQL database failed in every one of three
rounds tried (duplicate pg_type rows, MigrationSchemaMissing, half-created tables)."""

from __future__ import annotations

import fcntl
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml

from eco_service.bootstrap import MIGRATE_LOCK_KEY

ROOT = Path(__file__).resolve().parents[2]

PREPARE = [sys.executable, "-c",
           "import django; django.setup(); from eco_service.bootstrap import prepare_database; prepare_database()"]
MIGRATE = [sys.executable, "manage.py", "migrate", "--noinput"]
ENTRY = {"prepare": PREPARE, "migrate": MIGRATE}
# Each pair of start-up paths that can meet on one database: the automatic migrate of two
# replicas, a replica beside an operator's (or compose's) migrate, and two migrates.
PAIRS = [("prepare", "prepare"), ("prepare", "migrate"), ("migrate", "migrate")]
ROUNDS = 2  # per pair: the race is probabilistic, so each pair meets on several fresh databases


def _expected_migrations() -> set[tuple[str, str]]:
    from django.db.migrations.loader import MigrationLoader

    return set(MigrationLoader(None, ignore_no_migrations=True).graph.nodes)


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "eco_service.settings", **extra}


def _start(kind: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(ENTRY[kind], cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


def _run_together(kinds: tuple[str, str], env: dict[str, str], logs: Path) -> None:
    procs = [_start(kind, env, logs / f"{i}-{kind}.log") for i, kind in enumerate(kinds)]
    codes = [p.wait(timeout=300) for p in procs]
    report = "\n".join(f"--- {log.name}\n{log.read_text()}" for log in sorted(logs.glob("*.log")))
    assert codes == [0, 0], report


def _wait_for_line(log: Path, needle: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the process says it is waiting (a deadline only against a hang, not a timing claim)."""
    deadline = time.monotonic() + 120
    while needle not in log.read_text():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def _assert_schema_complete(rows: list[tuple[str, str]], periodic_tasks: int) -> None:
    assert len(rows) == len(set(rows)), "a migration was recorded twice"
    missing = _expected_migrations() - set(rows)
    assert not missing, f"migrations never applied: {sorted(missing)}"
    # The post-migrate hook ran once too: the beat entry exists, and exists once.
    assert periodic_tasks == 1


# --- PostgreSQL -----------------------------------------------------------------------------


@pytest.fixture
def fresh_postgres(postgres_url) -> Iterator[str]:
    server = postgres_url.rsplit("/", 1)[0]
    name = f"eco_race_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _postgres_state(url: str) -> tuple[list[tuple[str, str]], int]:
    with psycopg.connect(url) as conn:
        rows = [(r[0], r[1]) for r in conn.execute("SELECT app, name FROM django_migrations")]
        tasks = conn.execute("SELECT count(*) FROM django_celery_beat_periodictask "
                             "WHERE name = 'eco: refresh catalogs'").fetchone()
    assert tasks is not None
    return rows, tasks[0]


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}


@pytest.mark.postgres
@pytest.mark.parametrize("kinds", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_two_processes_started_together_on_a_fresh_postgres_database_both_start_and_migrate_it_once(
        postgres_url, kinds, tmp_path):
    server = postgres_url.rsplit("/", 1)[0]
    for round_no in range(ROUNDS):
        name = f"eco_race_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            logs = tmp_path / f"round{round_no}"
            logs.mkdir()
            _run_together(kinds, _env(DATABASE_URL=f"{server}/{name}"), logs)
            _assert_schema_complete(*_postgres_state(f"{server}/{name}"))
        finally:
            with psycopg.connect(server + "/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_manage_py_migrate_waits_for_the_postgres_migration_lock_held_by_another_session(fresh_postgres, tmp_path):
    log = tmp_path / "migrate.log"
    with psycopg.connect(fresh_postgres, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
        proc = _start("migrate", _env(DATABASE_URL=fresh_postgres), log)
        try:
            _wait_for_line(log, "waiting for another process to finish the database migrations", proc)
            assert "django_migrations" not in _tables(fresh_postgres), "migrated without the lock"
            holder.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
            assert proc.wait(timeout=300) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _assert_schema_complete(*_postgres_state(fresh_postgres))


# --- SQLite ---------------------------------------------------------------------------------


def _sqlite_state(db: Path) -> tuple[list[tuple[str, str]], int]:
    with sqlite3.connect(db) as conn:
        rows = [(r[0], r[1]) for r in conn.execute("SELECT app, name FROM django_migrations")]
        tasks = conn.execute("SELECT count(*) FROM django_celery_beat_periodictask "
                             "WHERE name = 'eco: refresh catalogs'").fetchone()[0]
    return rows, tasks


@pytest.mark.parametrize("kinds", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_two_processes_started_together_on_a_fresh_sqlite_data_dir_both_start_and_migrate_it_once(kinds, tmp_path):
    for round_no in range(ROUNDS):
        data = tmp_path / f"data{round_no}"  # not created: the first process to start makes it
        logs = tmp_path / f"round{round_no}"
        logs.mkdir()
        _run_together(kinds, _env(ECO_MCP_DATA_DIR=str(data)), logs)
        _assert_schema_complete(*_sqlite_state(data / "eco.sqlite3"))


def test_automatic_migrate_waits_for_the_sqlite_migration_lock_held_by_another_process(tmp_path):
    log = tmp_path / "prepare.log"
    with open(tmp_path / "eco.sqlite3.migrate-lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = _start("prepare", _env(ECO_MCP_DATA_DIR=str(tmp_path)), log)
        try:
            _wait_for_line(log, "waiting for another process to finish the database migrations", proc)
            with sqlite3.connect(tmp_path / "eco.sqlite3") as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            assert "django_migrations" not in tables, "migrated without the lock"
            fcntl.flock(lock, fcntl.LOCK_UN)
            assert proc.wait(timeout=300) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _assert_schema_complete(*_sqlite_state(tmp_path / "eco.sqlite3"))


# --- compose --------------------------------------------------------------------------------


def test_compose_migrates_once_in_a_one_shot_service_that_web_worker_and_beat_wait_for():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    migrate = services["migrate"]
    assert migrate["command"][-3:] == ["manage.py", "migrate", "--noinput"]
    assert migrate.get("restart", "no") == "no", "a one-shot service must not be restarted after it exits"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate["environment"]["DATABASE_URL"] == services["web"]["environment"]["DATABASE_URL"]
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
        # Replicas scale; if each migrated on start they would race again.
        assert "migrate" not in " ".join(services[name]["command"]), name
