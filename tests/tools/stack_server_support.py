"""Support for the eco_stack_tables-over-HTTP tests: the server's configuration with a dataset
store of the test's own, MCP clients each sending its caller's token, polling by dataset_id, and a
real Celery worker process building the datasets (tests/tools/test_stack_tables_http.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.catalog.celery_worker import require_postgres
from tests.downloads.conftest import token_config

ROOT = Path(__file__).resolve().parents[2]
LITTER = "DP1.10033.001"
STORAGE = r"^/storage/"


@contextlib.contextmanager
def broker_at(url: str, settings: Any) -> Iterator[str]:
    """The web side sends builds to the broker at `url` instead of running them here."""
    from eco_service.celery import app

    old = (app.conf.broker_url, app.conf.task_always_eager, app.conf.task_default_queue)
    settings.CELERY_BROKER_URL = url
    # A queue of this test's own: test files run side by side on one broker, and a worker of
    # another file must not take this one's builds (Worker listens on the same queue).
    app.conf.broker_url, app.conf.task_always_eager = url, False
    app.conf.task_default_queue = f"stack-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    # The app's connection and producer pools are made once, from the broker configured then: pools
    # an earlier test left (made with no broker set) would take this test's builds to no broker at
    # all, silently. Forgotten before and after.
    app._after_fork()
    try:
        yield url
    finally:
        app.conf.broker_url, app.conf.task_always_eager, app.conf.task_default_queue = old
        app._after_fork()


@pytest.fixture
def broker(redis_url: str, settings: Any) -> Iterator[str]:
    """Redis as the broker, as a deployment has it (the Worker below listens on it)."""
    require_postgres()
    with broker_at(redis_url, settings) as url:
        yield url


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def on_own_connection(fn: Any) -> None:
    """`fn()` on a thread with a database connection of its own, closed afterwards: what it
    writes is committed where the server's threads see it (the test's connection is inside the
    transaction that is rolled back), and a caller on the event loop does not block on the ORM."""
    from django.db import connections

    def run() -> None:
        try:
            fn()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def in_another_connection(blocker: Any, fn: Any) -> None:
    """on_own_connection with pytest-django's database block lifted."""
    with blocker.unblock():
        on_own_connection(fn)


@pytest.fixture
def rows_cleared(django_db_blocker: Any) -> Iterator[None]:
    """The server's threads commit their rows, past the test's rollback: the test starts with none (an
    earlier test on this worker may have left some) and leaves none."""
    from tables.models import Dataset

    in_another_connection(django_db_blocker, lambda: Dataset.objects.all().delete())
    yield
    in_another_connection(django_db_blocker, lambda: Dataset.objects.all().delete())


def record_ready(blocker: Any, dataset_id: str, record: dict[str, Any], folder: Path, **fields: Any) -> None:
    """A dataset already in the store, recorded ready (as a finished build leaves it)."""
    from tables.models import READY, Dataset
    from tables.store import now

    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    row = {"product": record["product"], "selection": record["selection"], "state": READY, "size_bytes": size,
           "requested_by": "test", "last_used_at": now(), "progress": {"phase": "ready"}, **fields}
    in_another_connection(blocker, lambda: Dataset.objects.create(dataset_id=dataset_id, **row))


def no_server_path(body: dict[str, Any], store: Path) -> None:
    text = json.dumps(body)
    assert str(store) not in text and str(store.parent) not in text and '"folder": null' in text


def rows() -> list[Any]:
    from tables.models import Dataset

    return list(Dataset.objects.order_by("created_at"))


def server_config(sim: Any, store: Path, **flags: Any) -> Any:
    return token_config(sim, None, server__transport="http", server__allow_insecure_header_token=True,
                        tables__store_directory=str(store), **flags)


@contextlib.asynccontextmanager
async def caller(url: str, token: str) -> AsyncIterator[Client]:
    """The SDK's MCP client over HTTP, sending `token` in the header HTTP callers send it in."""
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers={"X-API-Token": token}))
    async with Client(transport, mode="2026-07-28") as client:
        yield client


async def stack(client: Client, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool("eco_stack_tables", args)
    assert not result.is_error, result.structured_content
    return result.structured_content


async def poll(client: Client, dataset_id: str, seen: list[dict[str, Any]], *, until: tuple[str, ...] = ("ready",),
               seconds: float = 240, worker: Worker | None = None) -> dict[str, Any]:
    """Call with the id until the state is one of `until` (every answer goes to `seen`); on a
    timeout the worker's log, when given, says where the build stood."""
    deadline = time.monotonic() + seconds
    while True:
        body = await stack(client, {"dataset_id": dataset_id})
        seen.append(body)
        if body["state"] in until:
            return body
        assert body["state"] == "building" or "failed" in until, body
        assert time.monotonic() < deadline, (f"still {body['state']} after {seconds} s: {body['progress']}"
                                             + (f"; first notes {[b.get('notes') for b in seen[:2]]}; {broker_view()}; worker log: {worker.log()[-6000:]}"
                                                if worker else ""))
        await asyncio.sleep(0.2)


def broker_view() -> str:
    """Where the builds this process queued stand on the broker: the queue's length, the broker's
    unacknowledged deliveries, and the broker this process's producers hold (a build that never
    reached its worker shows up here)."""
    import redis

    from eco_service.celery import app

    queue = app.conf.task_default_queue
    r = redis.Redis.from_url(app.conf.broker_url)
    held = app._pool.connection.as_uri() if app._pool is not None else None
    lengths = {k.decode(): r.llen(k) for k in r.scan_iter(f"{queue}*") if r.type(k) == b"list"}
    stored: list[Any] = []

    def read() -> None:
        from tables.models import Dataset

        stored.extend(Dataset.objects.values_list("dataset_id", "state", "attempts", "queued_at", "started_at",
                                                  "created_at"))

    on_own_connection(read)
    return (f"broker {app.conf.broker_url} queue {queue}: lists {lengths}, unacked {r.hlen('unacked')}, "
            f"producer pool on {held}; dataset rows {stored}")


class Worker:
    """`celery -A eco_service worker --pool=solo` on the test database and this test's broker, with
    the simulator as upstream and the test's store; its log goes to a file (a full pipe would
    stall it). Runs in its own process group so a kill reaches everything it started."""

    def __init__(self, tmp_path: Path, sim: Any, broker: str, store: Path, **settings: Any) -> None:
        db = connection.settings_dict
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN", "REDIS_URL"))}
        self.env.update(
            DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            CELERY_BROKER_URL=broker, DJANGO_SETTINGS_MODULE="eco_service.settings",
            ECO_MCP_DATA_DIR=str(tmp_path / "worker-data"), ECO_MCP_ECO__BASE_URL=sim.base_url,
            # The builds need only the plan's signed URLs. Another GraphQL address makes the
            # locations catalog "from another upstream" for this worker, so the subtree walk a
            # starting worker queues waits instead of holding the one-task pool ahead of the builds.
            ECO_MCP_ECO__GRAPHQL_URL=f"{sim.graphql_url}?builds-only", ECO_MCP_DOWNLOADS__ALLOWED_HOSTS="127.0.0.1,localhost",
            ECO_MCP_TABLES__STORE_DIRECTORY=str(store),
        )
        self.env.update({f"ECO_MCP_{k.upper()}": str(v) for k, v in settings.items()})
        self.tmp_path = tmp_path
        self.proc: subprocess.Popen[str] | None = None
        self.runs = 0

    def start(self) -> Worker:
        from eco_service.celery import app

        self.runs += 1
        log = self.tmp_path / f"worker-{self.runs}.log"
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "eco_service", "worker", "--pool=solo", "--loglevel=INFO",
                 "-Q", app.conf.task_default_queue, "-n", f"stack-{os.getpid()}-{self.runs}@%h", "--without-gossip", "--without-mingle",
                 "--without-heartbeat"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        return self

    def wait_ready(self, seconds: float = 120) -> Worker:
        """Until the worker says it is ready: a deployment's workers are up before callers come,
        and a cold start on a loaded machine would otherwise eat into the build's wait."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the worker exited: {self.log()[-2000:]}")
            if " ready." in self.log():
                return self
            time.sleep(0.2)
        raise AssertionError(f"the worker was not ready in {seconds} s: {self.log()[-2000:]}")

    def log(self) -> str:
        return "\n".join((self.tmp_path / f"worker-{n}.log").read_text() for n in range(1, self.runs + 1))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
