"""No known secret key over HTTP (check eco.E004): both HTTP entry points refuse to start with an
unset, published or weak DJANGO_SECRET_KEY unless DJANGO_INSECURE_DEV_SECRET=1; stdio needs none."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.gateway.wire import modern_request

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STRONG_KEY = secrets.token_urlsafe(50)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def base_env(tmp_path) -> dict[str, str]:
    """A clean environment: its own data folder, no key and no dev switch from the caller's shell,
    no reachable upstream (nothing here may call NEON)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN", "DJANGO_", "DATABASE_URL", "REDIS_URL",
                                "CELERY_"))}
    env.update({"ECO_MCP_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
                "ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0", "ECO_MCP_ECO__GRAPHQL_URL": "http://127.0.0.1:9/graphql"})
    return env


def _http_command(port: int) -> list[str]:
    return [sys.executable, "manage.py", "eco_mcp", "--transport", "http", "--bind-port", str(port), "--no-prewarm"]


def _uvicorn_command(port: int) -> list[str]:
    return [str(BIN / "uvicorn"), "eco_service.asgi:application", "--host", "127.0.0.1", "--port", str(port)]


def _serves_healthz(args: list[str], env: dict[str, str], port: int) -> bool:
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                time.sleep(0.2)
        return False
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("key", [None, "change-me", "short-but-not-published-42"], ids=["unset", "compose-default", "short"])
@pytest.mark.parametrize("entry", ["eco_mcp", "uvicorn"])
def test_http_start_up_refuses_an_unset_published_or_short_key_naming_the_variable(base_env, key, entry):
    env = {**base_env, "ECO_MCP_SERVER__TRANSPORT": "http", "ECO_MCP_CACHE__PREWARM": "false"}
    if key is not None:
        env["DJANGO_SECRET_KEY"] = key
    port = _free_port()
    args = _http_command(port) if entry == "eco_mcp" else _uvicorn_command(port)
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "eco.E004" in out.stderr and "DJANGO_SECRET_KEY=" in out.stderr
    assert "DJANGO_INSECURE_DEV_SECRET=1" in out.stderr
    assert "Traceback" not in out.stderr
    if key is not None:
        assert key not in out.stderr


@pytest.mark.parametrize("setting", [{"DJANGO_SECRET_KEY": STRONG_KEY}, {"DJANGO_INSECURE_DEV_SECRET": "1"}],
                         ids=["strong-key", "dev-switch"])
def test_http_command_starts_with_a_strong_key_or_the_development_switch(base_env, setting):
    port = _free_port()
    assert _serves_healthz(_http_command(port), {**base_env, **setting}, port)


def test_uvicorn_entry_starts_with_a_strong_key(base_env):
    subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, env=base_env,
                   check=True, timeout=300)
    port = _free_port()
    env = {**base_env, "DJANGO_SECRET_KEY": STRONG_KEY, "ECO_MCP_CACHE__PREWARM": "false"}
    assert _serves_healthz(_uvicorn_command(port), env, port)


def test_stdio_serves_without_any_secret_key(base_env, tmp_path):
    call, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with (tmp_path / "stderr.log").open("w+") as err:
        proc = subprocess.Popen([sys.executable, "manage.py", "eco_mcp_stdio"], cwd=ROOT, env=base_env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        proc.stdin.close()
        proc.stdout.read()
        proc.wait(timeout=60)
        err.seek(0)
        assert line, err.read()
    assert json.loads(line)["result"]["structuredContent"]["transport"] == "stdio"


def test_compose_demands_a_secret_key_and_the_example_suggests_none():
    spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("web", "worker", "beat"):
        assert spec["services"][name]["environment"]["DJANGO_SECRET_KEY"].startswith("${DJANGO_SECRET_KEY:?")
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert example["DJANGO_SECRET_KEY"] == ""


def test_uvicorn_on_a_fresh_sqlite_data_folder_migrates_it_before_serving(base_env, tmp_path):
    import sqlite3

    port = _free_port()
    env = {**base_env, "DJANGO_SECRET_KEY": STRONG_KEY, "ECO_MCP_CACHE__PREWARM": "false"}
    proc = subprocess.Popen(_uvicorn_command(port), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        ready = None
        deadline = time.monotonic() + 90
        while ready is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
            except httpx.TransportError:
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert ready is not None
    # Empty catalogs are "warming"; an unmigrated database would be "unavailable".
    assert ready.json()["status"] != "unavailable", ready.text
    with sqlite3.connect(tmp_path / "data" / "eco.sqlite3") as db:
        applied = {row[0] for row in db.execute("SELECT app FROM django_migrations")}
    assert {"catalog", "django_celery_beat"} <= applied
