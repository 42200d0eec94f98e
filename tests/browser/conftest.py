"""A real service for the browser: `uvicorn eco_service.asgi:application` in its own process with
DEBUG off, its own SQLite data folder, a catalog built from the simulator and a staff user; and
Debian's chromium driven by Playwright (never a browser Playwright downloads)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import _missing

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STAFF_USER = "staff"


@dataclass
class Service:
    base: str
    password: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _service_env(sim: Any, data_dir: Path) -> dict[str, str]:
    # Nothing from the caller's deployment leaks in: SQLite in the test's folder, in-process cache.
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("ECO_MCP_", "DJANGO_", "DATABASE_URL", "REDIS_URL", "CELERY_"))}
    return {
        **keep,
        "PYTHONUNBUFFERED": "1",
        # Django's "must consume synchronous iterators" warning (a static file served the WSGI way
        # under ASGI) is printed every time, so the log can be searched for it.
        "PYTHONWARNINGS": "always",
        "ECO_MCP_DATA_DIR": str(data_dir),
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ECO_MCP_ECO__BASE_URL": sim.base_url,
        "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
        "ECO_MCP_CACHE__PREWARM": "false",
    }


def _manage(env: dict[str, str], *args: str) -> None:
    out = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, f"manage.py {' '.join(args)}: {out.stdout}\n{out.stderr}"


@pytest.fixture(scope="module")
def service(sim, tmp_path_factory) -> Iterator[Service]:
    with run_service(sim, tmp_path_factory.mktemp("admin-service")) as service:
        yield service


@contextlib.contextmanager
def run_service(sim: Any, folder: Path, prepare: Callable[[dict[str, str]], None] | None = None,
                **extra_env: str) -> Iterator[Service]:
    """The service on a free port, its data in `folder`; `extra_env` adds settings, `prepare(env)`
    runs after the migrations, before the server starts."""
    sim.reset()
    env = {**_service_env(sim, folder / "data"), **extra_env}
    (folder / "data").mkdir()
    password = secrets.token_urlsafe(16)
    _manage(env, "migrate", "--noinput")
    _manage(env, "eco_catalog_refresh")
    _manage({**env, "DJANGO_SUPERUSER_PASSWORD": password}, "createsuperuser", "--noinput",
            "--username", STAFF_USER, "--email", "staff@example.org")
    if prepare is not None:
        prepare(env)
    port = _free_port()
    log = folder / "uvicorn.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen([str(BIN / "uvicorn"), "eco_service.asgi:application", "--host", "127.0.0.1",
                                 "--port", str(port)], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)
    service = Service(f"http://127.0.0.1:{port}", password, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{service.base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, service.log_text()
                assert time.monotonic() < deadline, "uvicorn did not answer within 60 s"
                time.sleep(0.2)
        yield service
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if shutil.which(CHROMIUM) is None:
        _missing("chromium (Debian package chromium; .ci/run installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright (a dev dependency; run scripts/setup)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
