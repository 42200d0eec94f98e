"""The simulator runs as a process of its own and stays independent of the product code."""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from upstream_sim.tokens import check_token, issue_token

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = {"eco_service", "catalog", "mcp_gateway", "downloads", "families"}


def _free_port() -> int:
    """A port free together with the next one, which the simulator's storage host takes."""
    while True:
        with socket.socket() as s, socket.socket() as t:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            try:
                t.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port


def test_print_token_prints_a_token_the_simulator_accepts():
    out = subprocess.run([sys.executable, "manage.py", "eco_sim", "--print-token", "--seed", "3"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert check_token(out.stdout.strip(), seed=3) == "valid"


def test_eco_sim_serves_rest_graphql_and_storage_on_its_own_ports():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "manage.py", "eco_sim", "--port", str(port), "--seed", "3"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90  # a cold start on a loaded CI machine
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/v0/sites/HARV", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise AssertionError(f"eco_sim did not start: {proc.communicate()[0][-2000:]}") from None
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["data"]["siteCode"] == "HARV"
        g = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": "{ sites { siteCode } }"}, timeout=30)
        assert len(g.json()["data"]["sites"]) == 81
        tok = issue_token(seed=3)
        listing = httpx.get(f"http://127.0.0.1:{port}/api/v0/data/DP1.00001.001/HARV/2023-03",
                            headers={"X-API-Token": tok}, timeout=30).json()["data"]
        url = listing["files"][-1]["url"]
        assert url.startswith(f"http://localhost:{port + 1}/storage/neon-publication/")
        assert httpx.get(url, timeout=30).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_simulator_imports_nothing_from_the_product():
    for path in (ROOT / "upstream_sim").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in PRODUCT_PACKAGES, f"{path} imports {name}"


def test_the_server_starts_fast_and_binds_ephemeral_ports():
    from upstream_sim.server import SimServer

    t = time.monotonic()
    with SimServer(seed=5, port=0) as sim:
        assert time.monotonic() - t < 2
        assert sim.port and sim.storage_port and sim.port != sim.storage_port
        assert httpx.get(sim.base_url + "/sites/ABBY", timeout=30).status_code == 200
