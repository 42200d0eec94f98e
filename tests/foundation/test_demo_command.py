"""`python manage.py eco_demo`: the simulator and the service start together, offline, in their own
data folder; the printed HTTP URL answers a tool call through the MCP SDK client, the printed stdio
configuration points at the same simulator; SIGTERM stops both and removes the temporary folder."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from mcp import Client

ROOT = Path(__file__).resolve().parents[2]


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=1):
            return True
    except OSError:
        return False


def _read_until_ready(proc: subprocess.Popen[str]) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    while True:
        line = proc.stdout.readline()
        assert line, f"eco_demo ended before it was ready: {''.join(lines)}{proc.stderr.read() if proc.stderr else ''}"
        lines.append(line.rstrip("\n"))
        if line.startswith("Ctrl-C"):
            return lines


@pytest.mark.slow
async def test_eco_demo_serves_a_tool_call_over_http_and_stops_both_processes_on_sigterm():
    # A deployment's settings in the caller's environment must not reach the demo.
    env = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none", "ECO_MCP_ECO__BASE_URL":
           "http://127.0.0.1:9/api/v0", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "manage.py", "eco_demo"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        lines = _read_until_ready(proc)
        text = "\n".join(lines)
        http_url = re.search(r"MCP over HTTP: (\S+)", text)[1]  # type: ignore[index]
        start = lines.index("{")
        config = json.loads("\n".join(lines[start: lines.index("}", start) + 1]))
        server = config["mcpServers"]["eco-demo"]
        assert server["command"] == sys.executable and server["args"] == [str(ROOT / "manage.py"), "eco_mcp_stdio"]
        stdio_env = server["env"]
        data_dir = Path(stdio_env["ECO_MCP_DATA_DIR"])
        assert data_dir != ROOT / "data" and (data_dir / "eco.sqlite3").is_file()
        assert stdio_env["ECO_MCP_ECO__BASE_URL"] != "http://127.0.0.1:9/api/v0"
        assert stdio_env["ECO_MCP_ECO__API_TOKEN"].count(".") == 2  # the simulator's JWT
        # The stdio configuration's upstream is the running simulator, and it takes the token.
        sim_products = httpx.get(stdio_env["ECO_MCP_ECO__BASE_URL"] + "/products",
                                 headers={"X-API-Token": stdio_env["ECO_MCP_ECO__API_TOKEN"]}, timeout=10)
        assert sim_products.status_code == 200 and sim_products.json()["data"]

        async with Client(http_url, mode="2026-07-28") as client:
            found = await client.call_tool("eco_search_products", {"query": "soil temperature", "limit": 3})
            ping = await client.call_tool("eco_ping", {})
        assert not found.is_error and found.structured_content["items"][0]["productCode"] == "DP1.00041.001"
        assert ping.structured_content["transport"] == "http"

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not _listening(http_url) and not _listening(stdio_env["ECO_MCP_ECO__BASE_URL"])
        assert not data_dir.exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
