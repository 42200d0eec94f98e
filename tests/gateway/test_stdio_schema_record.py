"""A stdio server whose data folder's schema record (eco_service.schema_record) says the database
needs nothing loads only the apps its calls use; a database that is not as recorded (recreated,
its post-migrate work undone, other migration files than recorded) gets the full check and its
migrations before the first call, as always. Real subprocesses on a fresh data folder."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from catalog import schedule
from tables.apps import BUILDS_SWEEP_PERIODIC_TASK_NAME
from tests.gateway.conftest import PYTHON, REPO
from tests.gateway.test_stdio_start import StdioProcess, _applied, _env
from tests.gateway.wire import modern_request

ONLY = "loading only catalog, mcp_gateway, downloads"


def _pinged(env: dict[str, str], tmp_path: Path) -> str:
    """One start answering one eco_ping; its stderr (debug level)."""
    ping, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=1)
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as err:
        proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio", "--log-level", "debug"], cwd=REPO, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        server = StdioProcess(proc, stderr)
        server.send(ping)
        answer = server.answer()
        assert answer["result"]["structuredContent"]["pong"] == "ok", answer
        assert server.close() == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return stderr.read_text()


def _record(data: Path) -> Path:
    (path,) = (data / "cache").glob("schema-*.json")
    return path


# What the apps' post-migrate work writes: one beat entry per periodic task of the service.
BEAT_ENTRIES = {schedule.PERIODIC_TASK_NAME, schedule.SUBTREES_PERIODIC_TASK_NAME, BUILDS_SWEEP_PERIODIC_TASK_NAME}


def _beat_entries(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT name FROM django_celery_beat_periodictask WHERE name LIKE 'eco: %'").fetchall()
    return {name for (name,) in rows}


def test_a_start_on_a_database_its_last_start_left_up_to_date_loads_only_the_apps_its_calls_use(tmp_path):
    env = _env(tmp_path / "data")
    first = _pinged(env, tmp_path)
    assert ONLY not in first  # a fresh database: every app, the migrations, then the record
    assert ONLY in _pinged(env, tmp_path)


def test_a_database_recreated_since_the_record_is_migrated_before_the_first_call(tmp_path):
    data = tmp_path / "data"
    env = _env(data)
    _pinged(env, tmp_path)
    (data / "eco.sqlite3").unlink()
    assert ONLY not in _pinged(env, tmp_path)
    assert _applied(data / "eco.sqlite3") > 0 and _beat_entries(data / "eco.sqlite3") == BEAT_ENTRIES


def test_post_migrate_work_undone_since_the_record_is_done_before_the_first_call(tmp_path):
    data = tmp_path / "data"
    env = _env(data)
    _pinged(env, tmp_path)
    with sqlite3.connect(data / "eco.sqlite3") as conn:
        conn.execute("DELETE FROM django_celery_beat_periodictask WHERE name LIKE 'eco: %'")
    assert ONLY not in _pinged(env, tmp_path)
    assert _beat_entries(data / "eco.sqlite3") == BEAT_ENTRIES


def test_other_migration_files_than_recorded_mean_the_full_check_and_a_new_record(tmp_path):
    data = tmp_path / "data"
    env = _env(data)
    _pinged(env, tmp_path)
    path = _record(data)
    real = json.loads(path.read_text())
    other = json.loads(path.read_text())
    other["modules"]["catalog"][1] = other["modules"]["catalog"][1][:-1]  # as if written before the last one
    path.write_text(json.dumps(other))
    assert ONLY not in _pinged(env, tmp_path)
    assert json.loads(_record(data).read_text())["modules"] == real["modules"]
    assert ONLY in _pinged(env, tmp_path)


def test_an_unreadable_record_means_the_full_check(tmp_path):
    data = tmp_path / "data"
    env = _env(data)
    _pinged(env, tmp_path)
    _record(data).write_text("{not json")
    assert ONLY not in _pinged(env, tmp_path)
    assert ONLY in _pinged(env, tmp_path)
