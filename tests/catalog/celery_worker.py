"""A real Celery worker with embedded beat, fired by one stored schedule entry, for the refresh
tests that must run on a real worker (tests/catalog/test_schedule_and_worker.py,
tests/catalog/test_location_subtrees.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from catalog.schedule import ensure_refresh_schedule
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]


def require_postgres() -> None:
    """The worker process reads the test database, which it can see only on PostgreSQL."""
    if connection.vendor != "postgresql":
        reason = "needs the test database on PostgreSQL (DATABASE_URL) so the worker process can see it"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)


def run_beat_entry(entry: str, *, redis_url: str, sim: Any, tmp_path: Path, done: Callable[[], bool],
                   seconds: float = 150) -> str:
    """Store the beat schedule with only `entry` enabled, firing every 2 s into a queue that only
    this worker listens on; run `celery worker -B` until `done()` or `seconds`; return its log.

    The log goes to a file (a refresh logs a line per request and a full pipe would stall the
    worker), and the worker runs in its own process group: -B's beat child can outlive the
    worker's SIGTERM, and a survivor would hold the test run open."""
    queue = f"eco-test-{uuid.uuid4().hex[:8]}"
    ensure_refresh_schedule()
    PeriodicTask.objects.exclude(name=entry).update(enabled=False)
    task = PeriodicTask.objects.get(name=entry)
    task.interval = IntervalSchedule.objects.create(every=2, period=IntervalSchedule.SECONDS)
    task.queue = queue
    task.save()
    db = connection.settings_dict
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    env.update(
        DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        CELERY_BROKER_URL=redis_url,
        ECO_MCP_ECO__BASE_URL=sim.base_url,
        ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url,
        DJANGO_SETTINGS_MODULE="eco_service.settings",
    )
    log_path = tmp_path / f"{queue}.log"
    with log_path.open("w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "eco_service", "worker", "-B", "--pool=solo", "-Q", queue,
             "--loglevel=INFO", "-n", f"{queue}@%h", "-s", str(tmp_path / f"{queue}-schedule")],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and worker.poll() is None and not done():
                time.sleep(1)
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, signal.SIGKILL)
    return log_path.read_text()
