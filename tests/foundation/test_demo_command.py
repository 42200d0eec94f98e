"""`python manage.py eco_demo`: the simulator and the service start together, offline, in their own
data folder, and every configuration the demo prints works for what the demo offers: the stdio
one (Claude Desktop's `mcpServers` JSON, the same in VS Code's) downloads a file, the HTTP
endpoint lists files with the printed token header, the Python SDK line runs as printed; SIGTERM
stops both and removes the temporary folder."""

from __future__ import annotations

import ast
import contextlib
import io
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
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]
BIRDS = {"product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"}
CLAUDE = "Claude Desktop, Cursor or any mcpServers JSON (stdio): "
VSCODE = "VS Code, .vscode/mcp.json (stdio and HTTP): "
SDK = "Python SDK, pasted into `python -m asyncio`: "


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


def _after(lines: list[str], label: str) -> str:
    [line] = [line for line in lines if line.startswith(label)]
    return line[len(label):]


async def _run_sdk_line(code: str) -> str:
    """The printed SDK line, run as `python -m asyncio` runs what is pasted into it."""
    compiled = compile(code, "<sdk line>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pending = eval(compiled, namespace)
        if pending is not None:
            await pending
    await namespace["client"].__aexit__(None, None, None)
    return out.getvalue()


@pytest.mark.slow
async def test_eco_demo_prints_configurations_that_download_list_over_http_and_run_the_sdk_line(tmp_path):
    # A deployment's settings in the caller's environment must not reach the demo.
    env = {**os.environ, "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none", "ECO_MCP_ECO__BASE_URL":
           "http://127.0.0.1:9/api/v0", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "manage.py", "eco_demo"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        lines = _read_until_ready(proc)
        http_line = _after(lines, "MCP over HTTP: ").split()
        http_url, token = http_line[0], http_line[http_line.index("X-API-Token:") + 1]
        server = json.loads(_after(lines, CLAUDE))["mcpServers"]["eco-demo"]
        assert server["command"] == sys.executable and server["args"] == [str(ROOT / "manage.py"), "eco_mcp_stdio"]
        vscode = json.loads(_after(lines, VSCODE))["servers"]
        assert vscode["eco-demo"] == {"type": "stdio", **server}
        assert vscode["eco-demo-http"] == {"type": "http", "url": http_url, "headers": {"X-API-Token": token}}
        stdio_env = server["env"]
        data_dir = Path(stdio_env["ECO_MCP_DATA_DIR"])
        assert data_dir != ROOT / "data" and (data_dir / "eco.sqlite3").is_file()
        assert stdio_env["ECO_MCP_ECO__BASE_URL"] != "http://127.0.0.1:9/api/v0"
        assert stdio_env["ECO_MCP_ECO__API_TOKEN"] == token and token.count(".") == 2  # the simulator's JWT
        # The simulator's storage is allowed in the demo's own settings, not by loosening a default.
        assert stdio_env["ECO_MCP_DOWNLOADS__ALLOWED_HOSTS"] == "localhost"
        assert stdio_env["ECO_MCP_DOWNLOADS__STORAGE_ORIGINS"].startswith("http://localhost:")

        # HTTP: the endpoint lists files with the printed token in the printed header.
        headers = {"X-API-Token": token}
        transport = streamable_http_client(http_url, http_client=create_mcp_http_client(headers=headers))
        async with Client(transport, mode="2026-07-28") as client:
            listed = await client.call_tool("eco_list_files", BIRDS)
            ping = await client.call_tool("eco_ping", {})
            # Served from the simulator's storage by the server itself: the tables' dictionary.
            described = await client.call_tool("eco_describe_tables", {"product": BIRDS["product"], "site_code": "HARV"})
        assert not listed.is_error, listed.content
        assert not described.is_error, described.content
        assert described.structured_content["tables"]
        assert listed.structured_content["files"] and ping.structured_content["transport"] == "http"
        # The dataset pages open with the printed login.
        pages_line = _after(lines, "Dataset pages ").split()
        pages_url = next(w for w in pages_line if w.endswith("/datasets/"))
        user, password = pages_line[pages_line.index("login:") + 1], pages_line[pages_line.index("login:") + 3]
        async with httpx.AsyncClient(follow_redirects=True, timeout=30) as web:
            assert (await web.get(pages_url)).url.path == "/admin/login/"  # anonymous: the login first
            login_url = pages_url.replace("/datasets/", "/admin/login/")
            form = await web.get(login_url)
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)[1]
            listed_page = await web.post(login_url + "?next=/datasets/", data={
                "csrfmiddlewaretoken": csrf, "username": user, "password": password}, headers={"Referer": login_url})
        assert listed_page.status_code == 200 and listed_page.url.path == "/datasets/", listed_page.text[:500]
        assert 'id="datasets"' in listed_page.text

        # The SDK line runs as printed.
        assert "DP1.00041.001" in await _run_sdk_line(_after(lines, SDK))

        # stdio, spawned as a desktop client would (its own environment, another folder): downloads.
        params = StdioServerParameters(command=server["command"], args=server["args"], env=stdio_env,
                                       cwd=str(tmp_path))
        async with Client(params) as client:
            downloaded = await client.call_tool("eco_download_files", BIRDS)
        assert not downloaded.is_error, downloaded.content
        files = downloaded.structured_content["files"]
        assert files and {f["status"] for f in files} == {"downloaded"} and all(f["verified"] for f in files)
        landed = Path(stdio_env["ECO_MCP_DOWNLOADS__DIRECTORY"]) / "DP1.10003.001" / "HARV" / "2020-05"
        assert landed.parent.parent.parent.is_relative_to(data_dir)
        assert sorted(p.name for p in landed.iterdir()) == sorted(f["name"] for f in files)

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not _listening(http_url) and not _listening(stdio_env["ECO_MCP_ECO__BASE_URL"])
        assert not data_dir.exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
