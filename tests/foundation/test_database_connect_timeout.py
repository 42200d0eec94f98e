"""A PostgreSQL server that takes the connection but never answers (a host that drops packets
looks the same to libpq) cannot hold a catalog call for the kernel's TCP timeout: the settings
give every PostgreSQL connection a connect timeout, and the failure is the OperationalError
that calls answer as catalog_unavailable."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import os, time
os.environ['DJANGO_SETTINGS_MODULE'] = 'eco_service.settings'
import django
django.setup()
from django.db import OperationalError, connection
started = time.monotonic()
try:
    connection.ensure_connection()
except OperationalError:
    print('refused after', round(time.monotonic() - started, 1))
"""


def test_a_silent_database_server_fails_the_connection_within_the_connect_timeout():
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_say_nothing() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_say_nothing, daemon=True)
    thread.start()
    port = silent.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": f"postgresql://eco@127.0.0.1:{port}/eco", "REDIS_URL": ""}
    try:
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=60)
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        silent.close()
    assert "refused after" in out.stdout, out.stderr[-2000:]
    assert took < 30  # libpq's own default would wait on the silent server with no bound
