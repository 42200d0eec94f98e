"""Gateway fixtures: a real uvicorn server on an ephemeral loopback port (in a thread), the
stdio command as a real subprocess, and fakes for the catalog's status functions."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from catalog import status as catalog_status_mod
from catalog.models import STATE_NAMES, SUBTREES
from eco_core.config import EcoConfig, load_config
from eco_core.memo import memos
from mcp_gateway import ports

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def make_cfg(env: dict[str, str] | None = None, **flags: Any) -> EcoConfig:
    base = {"server.transport": "http"}
    base.update({k.replace("__", "."): v for k, v in flags.items()})
    return load_config(flags=base, env=env or {}, warn=False)


class RunningServer:
    def __init__(self, server: uvicorn.Server, thread: threading.Thread) -> None:
        self.server = server
        self.thread = thread
        sock = server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"


@contextmanager
def run_http(app: Any, **options: Any) -> Iterator[RunningServer]:
    """`options`: more uvicorn.Config settings (e.g. `http=` a protocol class)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield RunningServer(server, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def fake_catalog(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The catalog's status functions, faked: flip state["ready"] to warm it up."""
    state: dict[str, Any] = {"ready": False, "prewarmed": 0}

    def catalog_status(cfg: Any = None) -> dict[str, Any]:
        # Every catalog in the real status's shape: whoever reads it first in a process (eco_ping,
        # /metrics, the ops API) binds this fake, so each of them must be able to read it.
        ready = state["ready"]
        entry = {"count": 200 if ready else 0, "ageSeconds": 5 if ready else None,
                 "source": "graphql" if ready else None, "refreshedAt": None, "stale": not ready,
                 "lastError": None, "restBase": None, "graphqlUrl": None, "upstreamMismatch": None}
        out: dict[str, Any] = {c: dict(entry) for c in STATE_NAMES}
        out[SUBTREES].update(sitesDone=0, sitesTotal=0, refreshing=False)
        return {"ready": ready, "degraded": False, **out}

    def readiness(cfg: Any = None) -> tuple[bool, dict[str, Any]]:
        if not state["ready"]:
            return False, {"status": "warming"}
        return True, {"status": "ready", "catalogs": catalog_status(), "degraded": False, "tokenConfigured": False}

    async def prewarm(cfg: EcoConfig) -> None:
        state["prewarmed"] += 1
        state["ready"] = True

    # eco_ping and /metrics read the status through catalog.status.status_report, fresh here.
    monkeypatch.setattr(catalog_status_mod, "catalog_status", catalog_status)
    memos.drop_all()
    monkeypatch.setattr(ports, "readiness", readiness)
    monkeypatch.setattr(ports, "prewarm", prewarm)
    return state


@pytest.fixture
def http_server(fake_catalog: dict[str, Any]) -> Callable[..., Any]:
    """Factory: `with http_server(cfg) as srv:` serves build_app(cfg) on a real socket."""
    from mcp_gateway.http_app import build_app

    def start(cfg: EcoConfig | None = None, registry: Any = None, django_app: Any = None):
        return run_http(build_app(django_app=django_app, cfg=cfg or make_cfg(), registry=registry))

    return start


def sim_stdio(stdio_env: dict[str, str], sim: Any, token: str, downloads: Path, **env: str) -> Any:
    """`manage.py eco_mcp_stdio` against the simulator with `token`, downloading from its storage
    (loopback) into `downloads`; `env` adds settings."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env={
        **stdio_env, "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
        "ECO_TOKEN": token, "ECO_MCP_DOWNLOADS__DIRECTORY": str(downloads),
        "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost", **env})


@pytest.fixture(scope="session")
def stdio_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for `manage.py eco_mcp_stdio` subprocesses: a private, pre-migrated data dir,
    no token and no settings leaking in from the developer's shell."""
    data = tmp_path_factory.mktemp("eco-data")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))}
    env["ECO_MCP_DATA_DIR"] = str(data)
    env["PYTHONPATH"] = str(REPO)
    import subprocess

    subprocess.run([PYTHON, "manage.py", "migrate", "--verbosity", "0"], cwd=REPO, env=env, check=True, timeout=120)
    return env
