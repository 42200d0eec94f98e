"""The stdio command answers what needs no database (the tool list) before its set-up (Django's
apps, the database's migrations) is done; what needs it waits for it, and a set-up that fails
answers an error instead of leaving the client waiting. Real subprocesses, each on a fresh data
folder, so the migrations have to run."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.conftest import PYTHON, REPO
from tests.gateway.wire import modern_request

ANSWER_TIMEOUT_S = 180


def _env(data: Path, **extra: str) -> dict[str, str]:
    # The embedded default (SQLite in the data folder) whatever the suite runs on: these tests hold
    # and break that database's folder and migration lock.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))
           and k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(ECO_MCP_DATA_DIR=str(data), PYTHONPATH=str(REPO), **extra)
    return env


class StdioProcess:
    def __init__(self, proc: subprocess.Popen[str], stderr: Path) -> None:
        self.proc, self.stderr = proc, stderr
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no answer; stderr: {self.stderr.read_text()[-3000:]}") from None

    def close(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        return self.proc.wait(timeout=ANSWER_TIMEOUT_S)


@contextmanager
def stdio(env: dict[str, str], tmp_path: Path) -> Iterator[StdioProcess]:
    stderr = tmp_path / "stderr.log"
    with stderr.open("w") as err:
        proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio", "--log-level", "info"], cwd=REPO, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        yield StdioProcess(proc, stderr)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@contextmanager
def migration_lock_held(data: Path) -> Iterator[None]:
    """The lock every migrating process takes first (eco_service.bootstrap._sqlite_lock)."""
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "eco.sqlite3.migrate-lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _applied(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM django_migrations").fetchone()[0]


def test_the_tool_list_is_answered_while_the_database_waits_and_a_call_is_answered_once_it_is_ready(tmp_path):
    data = tmp_path / "data"
    listing, _ = modern_request("tools/list", rid=1)
    ping, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=2)
    with stdio(_env(data), tmp_path) as server:
        with migration_lock_held(data):
            server.send(listing)
            server.send(ping)
            first = server.answer()
            assert first["id"] == 1 and "eco_ping" in [t["name"] for t in first["result"]["tools"]]
            with pytest.raises(queue.Empty):  # the call waits for the migrations, which wait for the lock
                server.lines.get(timeout=2)
        second = server.answer()
        assert second["id"] == 2 and second["result"]["structuredContent"]["pong"] == "ok"
        assert server.close() == 0
    assert _applied(data / "eco.sqlite3") > 0


def test_a_database_that_cannot_be_prepared_answers_calls_with_an_error_and_ends_the_run_with_status_1(tmp_path):
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be: the database's folder cannot be made")
    listing, _ = modern_request("tools/list", rid=1)
    ping, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=2)
    again, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=3)
    with stdio(_env(data), tmp_path) as server:
        server.send(listing)
        server.send(ping)
        answers = {m["id"]: m for m in (server.answer(), server.answer())}
        assert "eco_ping" in [t["name"] for t in answers[1]["result"]["tools"]]
        error = answers[2]["error"]
        assert "could not finish starting" in error["message"] and error["data"]["code"] == "internal_error"
        server.send(again)  # the failure is kept, not retried into a hang
        assert "could not finish starting" in server.answer()["error"]["message"]
        assert server.close() == 1
    log = server.stderr.read_text()
    assert "could not finish starting" in log and "Traceback" in log


def test_a_bad_configuration_stops_the_serving_command_as_the_django_command_does(tmp_path):
    env = _env(tmp_path / "data", ECO_MCP_ECO__MAX_CONCURRENCY="999")
    quick = subprocess.run([PYTHON, "manage.py", "eco_mcp_stdio"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=ANSWER_TIMEOUT_S)
    # --traceback is one of Django's own flags, so this start goes through Django's command.
    django = subprocess.run([PYTHON, "manage.py", "eco_mcp_stdio", "--traceback"], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=ANSWER_TIMEOUT_S)
    assert quick.returncode == django.returncode == 2
    assert quick.stderr == django.stderr and "eco.max_concurrency" in quick.stderr
    assert quick.stdout == django.stdout == ""


def test_a_start_handed_back_to_djangos_command_has_the_cyclic_collector_on():
    import gc

    from eco_service.stdio_start import run_command

    assert gc.isenabled()
    assert run_command(["--print-config"]) is None  # Django's command prints it
    assert gc.isenabled()  # run_command turns it off while it starts
