"""The TypeScript SDK's client (npm @modelcontextprotocol/client 2.x) against the real HTTP
server. Installs into tests/gateway/node/ on first run; skips when node, npm or the package is
unavailable."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).parent / "node"
PACKAGE = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"


@pytest.fixture(scope="module")
def ts_client() -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm not installed: the TypeScript client test needs them")
    if not PACKAGE.exists():
        try:
            subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True,
                           capture_output=True, timeout=300)
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"could not install @modelcontextprotocol/client: {exc}")
    if not PACKAGE.exists():
        pytest.skip("@modelcontextprotocol/client is not installed")
    major = json.loads(PACKAGE.read_text())["version"].split(".")[0]
    if major != "2":
        pytest.skip(f"@modelcontextprotocol/client {major}.x installed; this test is for 2.x")
    return NODE_DIR / "ts_client.mjs"


def _run(script: Path, url: str, mode: str) -> dict:
    proc = subprocess.run(["node", str(script), url, mode], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("mode", "version"), [("pin", "2026-07-28"), ("legacy", "2025-11-25")])
def test_typescript_sdk_client_lists_calls_and_sees_unknown_tool_error(http_server, ts_client, mode, version):
    with http_server() as srv:
        out = _run(ts_client, srv.url, mode)
    assert out["protocolVersion"] == version
    assert "eco_ping" in out["tools"] and out["tools"] == sorted(out["tools"])
    assert out["ping"]["isError"] is False
    body = out["ping"]["structuredContent"]
    assert body["pong"] == "ok" and body["transport"] == "http" and body["protocolVersion"] == version
    assert "io.eco-mcp/upstream" in out["ping"]["meta"]
    assert out["unknown"]["isError"] is True, out["unknown"]
    assert out["unknown"]["structuredContent"]["error"]["code"] == "unknown_tool"
