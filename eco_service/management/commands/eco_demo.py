"""`python manage.py eco_demo [--data-dir DIR] [--seed N]`: an offline demo in one command.

Starts the NEON simulator (`eco_sim`) and the MCP service over HTTP (`eco_mcp --transport http`),
each in its own process on a free loopback port, the service with its own data folder so the
demo's catalog never mixes with data/eco.sqlite3. When the catalogs are warm it prints, one line
each, client configurations that work for everything the demo offers: a `mcpServers` JSON (Claude
Desktop, Cursor, ...) and a VS Code `.vscode/mcp.json` for stdio, where downloads work, the HTTP
endpoint with the simulator's token in its header, the dataset pages' URL with a staff login made
for the demo, and a plain Python SDK line. Ctrl-C or SIGTERM
stops both; a temporary data folder is removed.

What the demo allows that a deployment would not, in its own settings only (never the defaults):
  - fetches from the simulator's storage, a plain-http origin on loopback
    (`downloads.allowed_hosts`, `downloads.storage_origins`): stdio's downloads into the data
    folder, and over HTTP the tables' dictionaries and the stacks built into the server's store;
  - callers' `X-API-Token` over plain http (`server.allow_insecure_header_token`): the service
    listens on 127.0.0.1 only, so the header never crosses a network, and the token is the
    simulator's, worth nothing elsewhere. Lending the service's own token to anonymous callers
    (`server.share_config_token_over_http`) was the alternative; it would let any local process
    act with it unasked, and would teach nothing a real deployment does.

The simulator runs as a process of its own because the product never imports it
(tests/architecture); the service does because its data folder is read when settings load.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

MANAGE = Path(settings.BASE_DIR) / "manage.py"
READY_TIMEOUT_S = 180
# A deployment's settings must not reach the demo: it is offline and keeps to its own folder.
DEMO_USER = "demo"
_DROPPED = ("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN", "DATABASE_URL", "REDIS_URL", "CELERY_", "DJANGO_")
_SIM_LINE = re.compile(r"REST (?P<rest>http://\S+?)/?\s+GraphQL (?P<graphql>http://\S+)\s+"
                       r"storage (?P<storage>http://[^/\s]+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen[Any] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


class Command(BaseCommand):
    help = "Run the simulator and the MCP service together, offline, and print ready client configurations."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--data-dir", type=Path, default=None,
                            help="the service's data folder (default: a temporary folder removed at exit)")
        parser.add_argument("--seed", type=int, default=1, help="the simulator's seed (default 1)")
        parser.add_argument("--port", type=int, default=0, help="the service's HTTP port (default: a free one)")

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        temporary = options["data_dir"] is None
        data_dir = Path(tempfile.mkdtemp(prefix="eco-demo-")) if temporary else options["data_dir"].resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        sim: subprocess.Popen[str] | None = None
        service: subprocess.Popen[bytes] | None = None
        try:
            base_env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
            base_env["PYTHONUNBUFFERED"] = "1"
            seed = str(options["seed"])
            token = subprocess.run([sys.executable, str(MANAGE), "eco_sim", "--print-token", "--seed", seed],
                                   env=base_env, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
            sim = subprocess.Popen([sys.executable, str(MANAGE), "eco_sim", "--port", "0", "--seed", seed],
                                   env=base_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                   start_new_session=True)
            rest, graphql, storage = self._sim_urls(sim.stdout)
            upstream = {"ECO_MCP_DATA_DIR": str(data_dir), "ECO_MCP_ECO__BASE_URL": rest,
                        "ECO_MCP_ECO__GRAPHQL_URL": graphql,
                        # The simulator's signed URLs point at its storage port on `localhost`: the
                        # stdio server downloads from it, the HTTP one reads tables' dictionaries and
                        # stacks from it into its store.
                        "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": urlsplit(storage).hostname or "localhost",
                        "ECO_MCP_DOWNLOADS__STORAGE_ORIGINS": storage}
            port = options["port"] or _free_port()
            log_path = data_dir / "service.log"
            with log_path.open("ab") as log:
                service = subprocess.Popen(
                    [sys.executable, str(MANAGE), "eco_mcp", "--transport", "http", "--bind-address", "127.0.0.1",
                     "--bind-port", str(port)],
                    env={**base_env, **upstream, "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
                         # Loopback only (see the module docstring): callers bring the demo token.
                         "ECO_MCP_SERVER__ALLOW_INSECURE_HEADER_TOKEN": "true"},
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            base = f"http://127.0.0.1:{port}"
            self._wait_ready(base, service, sim, stop, log_path)
            if stop.is_set():
                return
            stdio_env = {**upstream, "ECO_MCP_ECO__API_TOKEN": token,
                         "ECO_MCP_DOWNLOADS__DIRECTORY": str(data_dir / "downloads")}
            # A staff login of the demo's own (its database only) for the admin and the dataset pages.
            password = secrets.token_urlsafe(12)
            subprocess.run([sys.executable, str(MANAGE), "createsuperuser", "--noinput", "--username", DEMO_USER,
                            "--email", "demo@example.org"],
                           env={**base_env, **upstream, "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
                                "DJANGO_SUPERUSER_PASSWORD": password},
                           capture_output=True, text=True, check=True, timeout=120)
            self.stdout.write(self._ready_text(seed, data_dir, base, log_path, stdio_env, token, password))
            self.stdout.flush()
            while not stop.wait(0.5):
                for name, proc in (("service", service), ("simulator", sim)):
                    if proc.poll() is not None:
                        raise CommandError(f"the {name} stopped (exit {proc.returncode}); see {log_path}")
            self.stdout.write("eco demo stopping")
        finally:
            _stop(service)
            _stop(sim)
            if temporary:
                shutil.rmtree(data_dir, ignore_errors=True)

    @staticmethod
    def _ready_text(seed: str, data_dir: Path, base: str, log_path: Path, stdio_env: dict[str, str],
                    token: str, password: str) -> str:
        """What a person needs, one line per client; every configuration holds only while the demo runs."""
        stdio = {"command": sys.executable, "args": [str(MANAGE), "eco_mcp_stdio"], "env": stdio_env}
        http = {"type": "http", "url": f"{base}/mcp", "headers": {"X-API-Token": token}}
        vscode = {"servers": {"eco-demo": {"type": "stdio", **stdio}, "eco-demo-http": http}}
        sdk = ("import httpx2, mcp; from mcp.client.streamable_http import streamable_http_client; "
               f"client = await mcp.Client(streamable_http_client({base + '/mcp'!r}, http_client=httpx2.AsyncClient("
               f"headers={{'X-API-Token': {token!r}}}))).__aenter__(); "
               "print((await client.call_tool('eco_search_products', {'query': 'soil temperature', 'limit': 3}))"
               ".structured_content)")
        return (f"eco demo ready (simulator seed {seed}, data folder {data_dir}, downloads to "
                f"{stdio_env['ECO_MCP_DOWNLOADS__DIRECTORY']})\n"
                f"MCP over HTTP: {base}/mcp   header X-API-Token: {token}   admin: {base}/admin/   log: {log_path}\n"
                f"Dataset pages (what eco_stack_tables built over HTTP: tables, SQL, charts, CSV): {base}/datasets/   "
                f"login: {DEMO_USER} / {password}\n"
                "Client configurations, one line each (valid while this demo runs; stdio also downloads):\n"
                f"Claude Desktop, Cursor or any mcpServers JSON (stdio): "
                f"{json.dumps({'mcpServers': {'eco-demo': stdio}})}\n"
                f"VS Code, .vscode/mcp.json (stdio and HTTP): {json.dumps(vscode)}\n"
                f"Python SDK, pasted into `python -m asyncio`: {sdk}\n"
                "Ctrl-C stops the simulator and the service.\n")

    @staticmethod
    def _sim_urls(out: IO[str] | None) -> tuple[str, str, str]:
        assert out is not None
        line = out.readline()
        match = _SIM_LINE.search(line)
        if match is None:
            raise CommandError(f"the simulator did not start: {line.strip() or 'no output'}")
        return match["rest"], match["graphql"], match["storage"]

    @staticmethod
    def _wait_ready(base: str, service: subprocess.Popen[bytes], sim: subprocess.Popen[str],
                    stop: threading.Event, log_path: Path) -> None:
        # Ready means the catalogs are built (/readyz 200), so the first tool call answers at once.
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not stop.is_set():
            for name, proc in (("service", service), ("simulator", sim)):
                if proc.poll() is not None:
                    raise CommandError(f"the {name} stopped before it was ready (exit {proc.returncode}); "
                                       f"see {log_path}")
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise CommandError(f"the service was not ready within {READY_TIMEOUT_S} s; see {log_path}")
            stop.wait(0.3)
