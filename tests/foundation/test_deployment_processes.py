"""The compose deployment's processes, started directly against the local PostgreSQL and Redis
(no Docker engine here): web answers /healthz, the worker answers a ping, beat runs its schedule."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def deployment_env(postgres_url, redis_url) -> Iterator[dict[str, str]]:
    name = f"eco_dep_{uuid.uuid4().hex[:10]}"
    server = postgres_url.rsplit("/", 1)[0]
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    broker = redis_url.rsplit("/", 1)[0] + "/15"
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "PYTHONUNBUFFERED": "1",
        "DATABASE_URL": f"{server}/{name}",
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker,
        "ECO_MCP_SERVER__TRANSPORT": "http",
        # HTTP start-up (and migrate's checks) refuse a known secret key; this one is the test's own.
        "DJANGO_SECRET_KEY": "deployment-test-" + uuid.uuid4().hex + uuid.uuid4().hex,
        "ECO_MCP_CACHE__PREWARM": "false",
        # No upstream in this test: nothing may be fetched from NEON.
        "ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0",
        "ECO_MCP_ECO__GRAPHQL_URL": "http://127.0.0.1:9/graphql",
    }
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stderr
    try:
        yield env
    finally:
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=5)


@pytest.mark.postgres
@pytest.mark.redis
def test_web_process_answers_healthz_on_postgres_and_redis(deployment_env, tmp_path):
    port = _free_port()
    proc = _start([str(BIN / "uvicorn"), "eco_service.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
                  deployment_env, tmp_path / "web.log")
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, (tmp_path / "web.log").read_text()
                assert time.monotonic() < deadline, "web did not answer within 60 s"
                time.sleep(0.3)
        assert resp.status_code == 200
        body = resp.json()
        assert body["status"] == "ok" and body["transport"] == "http"
        admin = httpx.get(f"http://127.0.0.1:{port}/admin/login/", timeout=5)
        assert admin.status_code == 200 and "eco-mcp admin" in admin.text
    finally:
        _stop(proc)


@pytest.mark.postgres
@pytest.mark.redis
def test_worker_answers_a_ping_and_beat_starts_its_database_schedule(deployment_env, tmp_path):
    worker = _start([str(BIN / "celery"), "-A", "eco_service", "worker", "--loglevel", "info", "--concurrency", "1",
                     "--hostname", f"eco-test-{uuid.uuid4().hex[:6]}@%h"], deployment_env, tmp_path / "worker.log")
    beat = _start([str(BIN / "celery"), "-A", "eco_service", "beat", "--loglevel", "info",
                   "--schedule", str(tmp_path / "beat-schedule")], deployment_env, tmp_path / "beat.log")
    try:
        deadline = time.monotonic() + 90
        answered = False
        while time.monotonic() < deadline and not answered:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            ping = subprocess.run([str(BIN / "celery"), "-A", "eco_service", "inspect", "ping", "--timeout", "3"],
                                  cwd=ROOT, env=deployment_env, capture_output=True, text=True, timeout=60)
            answered = "pong" in ping.stdout
        assert answered, (tmp_path / "worker.log").read_text()
        while time.monotonic() < deadline and "DatabaseScheduler" not in (tmp_path / "beat.log").read_text():
            assert beat.poll() is None, (tmp_path / "beat.log").read_text()
            time.sleep(0.5)
        log = (tmp_path / "beat.log").read_text()
        assert "DatabaseScheduler" in log and beat.poll() is None, log
    finally:
        _stop(worker)
        _stop(beat)
