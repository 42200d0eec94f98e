"""What the kill -9 tests share: real subprocesses of the product's own commands, a real SIGKILL,
polling for the moment to kill (never a sleep), and the PostgreSQL databases they run on.

The databases are named `kill9_*` and dropped at the end. `shared_pg(postgres_url, tmp)` gives
one migrated database per session: the migrate test compares an interrupted migrate's schema
with it, the refresh test builds and kills refreshes on it. A session fixture is made once per
module that defines it, so the memo here is what keeps it to one migrate per session.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# A deadline only against a hang (a process that never reaches the kill point), not a timing claim.
HANG_S = 120.0
T = TypeVar("T")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a product subprocess: nothing leaks in from the developer's shell or the
    CI run (its DATABASE_URL, REDIS_URL, broker, ECO_MCP_* settings or token)."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("ECO_", "DATABASE_URL", "REDIS_URL", "CELERY_", "DJANGO_"))}
    return {**keep, "PYTHONUNBUFFERED": "1", "DJANGO_SETTINGS_MODULE": "eco_service.settings",
            "PYTHONPATH": str(REPO), **extra}


def sim_env(sim: Any, **extra: str) -> dict[str, str]:
    return clean_env(ECO_MCP_ECO__BASE_URL=sim.base_url, ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url, **extra)


def spawn_python(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`python <args>` in the repository, with stdout and stderr in `log`."""
    return subprocess.Popen([PYTHON, *args], cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`python manage.py <args>`."""
    return spawn_python(["manage.py", *args], env, log)


def run(args: list[str], env: dict[str, str], log: Path) -> int:
    return run_python(["manage.py", *args], env, log)


def run_python(args: list[str], env: dict[str, str], log: Path) -> int:
    proc = spawn_python(args, env, log)
    try:
        return proc.wait(timeout=HANG_S * 2)
    finally:
        if proc.poll() is None:
            kill9(proc.pid)


def children(pid: int) -> list[int]:
    """The pids of a process's children (every thread's), read from /proc."""
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB, read from outside it."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def kill9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def kill9_and_reap(proc: subprocess.Popen[bytes], log: Path | None = None) -> None:
    """SIGKILL, and proof that it was the kill that ended the process (not its own exit)."""
    kill9(proc.pid)
    code = proc.wait(timeout=30)
    assert code == -signal.SIGKILL, f"the process had already exited ({code}) before the kill" + (
        f"\n{log.read_text()[-3000:]}" if log else "")


def wait_until(probe: Callable[[], T | None], what: str, *, alive: subprocess.Popen[bytes] | None = None,
               log: Path | None = None, every_s: float = 0.01) -> T:
    """Poll `probe` until it returns something truthy; while waiting, `alive` must not exit (it
    would have finished before the moment the test means to kill it in)."""
    deadline = time.monotonic() + HANG_S
    while True:
        got = probe()
        if got:
            return got
        tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"the process exited ({alive.returncode}) before {what}\n{tail}")
        if time.monotonic() > deadline:
            if alive is not None:
                kill9(alive.pid)  # not left behind by a failed test
            raise AssertionError(f"no sign of {what} after {HANG_S:.0f} s\n{tail}")
        time.sleep(every_s)


# --- PostgreSQL --------------------------------------------------------------------------------


def server_of(postgres_url: str) -> str:
    return postgres_url.rsplit("/", 1)[0]


def create_db(postgres_url: str, tag: str) -> str:
    name = f"kill9_{tag}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_of(postgres_url) + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server_of(postgres_url)}/{name}"


def drop_db(url: str) -> None:
    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_db(postgres_url: str, tag: str) -> Iterator[str]:
    url = create_db(postgres_url, tag)
    try:
        yield url
    finally:
        drop_db(url)


def query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return list(conn.execute(sql, params).fetchall())


def pg_schema(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every column, constraint and index of the public schema, as comparable sorted lists."""
    return {
        "columns": sorted(query(url, "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, "
                                     "column_default, character_maximum_length, numeric_precision "
                                     "FROM information_schema.columns WHERE table_schema = 'public'")),
        "constraints": sorted(query(url, "SELECT table_name, constraint_name, constraint_type "
                                         "FROM information_schema.table_constraints "
                                         "WHERE table_schema = 'public' AND constraint_type <> 'CHECK'")),
        "checks": sorted(query(url, "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint "
                                    "WHERE contype = 'c' AND connamespace = 'public'::regnamespace")),
        "indexes": sorted(query(url, "SELECT tablename, indexname, indexdef FROM pg_indexes "
                                     "WHERE schemaname = 'public'")),
    }


_shared: dict[str, str] = {}


def shared_pg(postgres_url: str, tmp: Path) -> str:
    """The session's `kill9_shared_*` database, migrated once by an uninterrupted `migrate`."""
    if "url" not in _shared:
        url = create_db(postgres_url, "shared")
        log = tmp / "shared-migrate.log"
        if run(["migrate", "--noinput"], clean_env(DATABASE_URL=url, ECO_MCP_DATA_DIR=str(tmp)), log) != 0:
            drop_db(url)  # the fixture fails before its teardown is set up
            raise AssertionError(log.read_text())
        _shared["url"] = url
    return _shared["url"]


def drop_shared() -> None:
    url = _shared.pop("url", None)
    if url:
        drop_db(url)


def refresh_json(log: Path) -> dict[str, Any]:
    """The last line of an `eco_catalog_refresh --json` run's output."""
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def warm_sqlite_copy(sim_data_dir: Any, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """This test's own copy of the suite's warm embedded database, and the environment of a
    process that uses it."""
    data = tmp_path / "data"
    data.mkdir()
    db = data / "eco.sqlite3"
    shutil.copy2(sim_data_dir.path / "eco.sqlite3", db)
    return db, {**sim_data_dir.env, "ECO_MCP_DATA_DIR": str(data)}
