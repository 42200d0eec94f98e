"""`manage.py eco_sim` on a port it cannot have says which port, why and how to pick another,
exits 2 and prints no traceback: for its API port and for its storage port (PORT+1)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def taken_port():
    """A port another process (this one) is listening on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "eco_sim", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_a_taken_api_port_is_named_with_how_to_pick_another_and_exit_2(taken_port):
    out = _sim("--port", str(taken_port))
    assert out.returncode == 2 and out.stdout == ""
    assert f"cannot listen on 127.0.0.1:{taken_port} (taken by another process)" in out.stderr
    assert "--port N" in out.stderr and "--port 0" in out.stderr and "Traceback" not in out.stderr


@pytest.fixture
def storage_taken():
    """(PORT, PORT+1): PORT free a moment ago, PORT+1 taken (listened on by this process)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
            port = s.getsockname()[1] - 1
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
            yield port, port + 1
            return
    pytest.fail("no free port below a taken one")


def test_a_taken_storage_port_names_it_as_port_plus_one_and_how_to_move_it(storage_taken):
    port, taken_port = storage_taken
    out = _sim("--port", str(port))
    assert out.returncode == 2 and out.stdout == ""
    assert f"cannot listen on 127.0.0.1:{taken_port} (taken by another process)" in out.stderr
    assert f"the storage port (--port {port} plus one)" in out.stderr
    assert "--storage-port N" in out.stderr and "Traceback" not in out.stderr
