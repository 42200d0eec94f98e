"""Reliability fixtures: the real service, as separate processes, in front of the session's
simulator, with a data folder whose catalogs were built from that simulator.

- `sim_data_dir` (session): a migrated SQLite data folder whose catalogs `eco_catalog_refresh`
  built from the simulator, plus the environment every service process of the suite starts
  from (nothing from the developer's shell or the team deployment leaks in).
- `fresh_token(sim)`: a valid simulator token with a rate-limit bucket of its own (the simulator
  keys buckets by token), so a suite of many calls never starves the tests after it.
- `serve_http(env)`: `manage.py eco_mcp --transport http` as a subprocess on a free port; yields
  its /mcp URL and its log (stderr), stopped at the end.
- `stdio_params(env)`: the SDK's parameters to spawn `manage.py eco_mcp_stdio`.
- `ServerLog.traceback_of(correlation_id)`: the log lines of an `internal_error`, for reports.
"""

from __future__ import annotations

import itertools
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# The deployment a service process may inherit from the shell: each suite says what it wants.
_SHELL_ONLY = ("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN", "DATABASE_URL", "REDIS_URL", "CELERY_", "DJANGO_")
_token_serial = itertools.count(1)


def fresh_token(sim: Any) -> str:
    # A token's text is its bucket key; a distinct lifetime gives a distinct text.
    return sim.issue_token(exp_s=7200 + next(_token_serial))


def base_env(sim: Any, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SHELL_ONLY)}
    env.update({"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "ECO_MCP_DATA_DIR": str(data_dir),
                "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
                "ECO_MCP_CACHE__PREWARM": "false"})
    return env


@dataclass(frozen=True)
class SimDataDir:
    path: Path
    env: dict[str, str]


# `manage.py migrate` then `manage.py eco_catalog_refresh`, in one process (one Django start-up).
_BUILD = ("import django; django.setup(); from django.core.management import call_command; "
          "call_command('migrate', verbosity=0); call_command('eco_catalog_refresh')")


@pytest.fixture(scope="session")
def sim_data_dir(sim, tmp_path_factory: pytest.TempPathFactory) -> SimDataDir:
    """Built once: the catalogs come from the simulator through the product's own refresh, the
    way an operator builds them (GraphQL first), so every server process starts warm."""
    data = tmp_path_factory.mktemp("reliability-data")
    env = base_env(sim, data)
    # A token of its own, sent everywhere: the refresh must not spend the anonymous budget the
    # other tests share.
    build_env = {**env, "DJANGO_SETTINGS_MODULE": "eco_service.settings", "ECO_TOKEN": fresh_token(sim),
                 "ECO_MCP_ECO__TOKEN_FOR_PUBLIC_ENDPOINTS": "true"}
    out = subprocess.run([PYTHON, "-c", _BUILD], cwd=REPO, env=build_env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"migrate + eco_catalog_refresh failed:\n{out.stdout}\n{out.stderr[-4000:]}"
    return SimDataDir(data, env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def text(self) -> str:
        return self.path.read_text(errors="replace") if self.path.exists() else ""

    def traceback_of(self, correlation_id: str, lines: int = 25) -> str:
        """The logged traceback of one internal_error (its correlation id starts the entry)."""
        text = self.text().splitlines()
        at = next((i for i, line in enumerate(text) if correlation_id in line), None)
        return "\n".join(text[at:at + lines]) if at is not None else f"(no log line holds {correlation_id})"


@dataclass(frozen=True)
class HttpService:
    url: str
    log: ServerLog


@contextmanager
def serve_http(env: dict[str, str], log_path: Path) -> Iterator[HttpService]:
    """The HTTP transport as the CLI runs it, in its own process; its stderr goes to `log_path`."""
    port = free_port()
    env = {**env, "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}
    with log_path.open("wb") as handle:
        proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp", "--transport", "http", "--bind-port", str(port),
                                 "--no-prewarm"], cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
    service = HttpService(f"http://127.0.0.1:{port}/mcp", ServerLog(log_path))
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, f"the HTTP server exited:\n{service.log.text()[-4000:]}"
            assert time.monotonic() < deadline, f"the HTTP server did not answer in 90 s:\n{service.log.text()[-4000:]}"
            time.sleep(0.2)
        yield service
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)
