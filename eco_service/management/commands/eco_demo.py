"""`python manage.py eco_demo [--data-dir DIR] [--seed N]`: an offline demo in one command.

Starts the NEON simulator (`eco_sim`) and the MCP service over HTTP (`eco_mcp --transport http`),
each in its own process on a free loopback port, the service with its own data folder so the
demo's catalog never mixes with data/eco.sqlite3. When the catalogs are warm it prints the HTTP
URL and a stdio client configuration that points at the same simulator, token and data folder.
Ctrl-C or SIGTERM stops both; a temporary data folder is removed.

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

import httpx
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

MANAGE = Path(settings.BASE_DIR) / "manage.py"
READY_TIMEOUT_S = 180
# A deployment's settings must not reach the demo: it is offline and keeps to its own folder.
_DROPPED = ("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN", "DATABASE_URL", "REDIS_URL", "CELERY_", "DJANGO_")
_SIM_LINE = re.compile(r"REST (?P<rest>http://\S+?)/?\s+GraphQL (?P<graphql>http://\S+)")


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
            rest, graphql = self._sim_urls(sim.stdout)
            upstream = {"ECO_MCP_DATA_DIR": str(data_dir), "ECO_MCP_ECO__BASE_URL": rest,
                        "ECO_MCP_ECO__GRAPHQL_URL": graphql, "ECO_MCP_ECO__API_TOKEN": token}
            port = options["port"] or _free_port()
            log_path = data_dir / "service.log"
            with log_path.open("ab") as log:
                service = subprocess.Popen(
                    [sys.executable, str(MANAGE), "eco_mcp", "--transport", "http", "--bind-address", "127.0.0.1",
                     "--bind-port", str(port)],
                    env={**base_env, **upstream, "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)},
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            base = f"http://127.0.0.1:{port}"
            self._wait_ready(base, service, sim, stop, log_path)
            if stop.is_set():
                return
            stdio = {"mcpServers": {"eco-demo": {"command": sys.executable,
                                                 "args": [str(MANAGE), "eco_mcp_stdio"], "env": upstream}}}
            self.stdout.write(f"eco demo ready (simulator seed {seed}, data folder {data_dir})\n"
                              f"MCP over HTTP: {base}/mcp   admin: {base}/admin/   log: {log_path}\n"
                              f"MCP over stdio, a client configuration (valid while this demo runs):\n"
                              f"{json.dumps(stdio, indent=2)}\n"
                              "Ctrl-C stops the simulator and the service.")
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
    def _sim_urls(out: IO[str] | None) -> tuple[str, str]:
        assert out is not None
        line = out.readline()
        match = _SIM_LINE.search(line)
        if match is None:
            raise CommandError(f"the simulator did not start: {line.strip() or 'no output'}")
        return match["rest"], match["graphql"]

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
