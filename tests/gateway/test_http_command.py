"""`python manage.py eco_mcp --transport http` as a real process."""

from __future__ import annotations

import socket
import subprocess
import time

import httpx
from mcp import Client

from tests.gateway.conftest import PYTHON, REPO


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_the_http_command_serves_health_and_mcp_until_terminated(stdio_env):
    port = _free_port()
    proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp", "--transport", "http", "--bind-port", str(port),
                             "--no-prewarm"], cwd=REPO, env={**stdio_env, "DJANGO_INSECURE_DEV_SECRET": "1"},
                            stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"{base}/healthz", timeout=1).json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert health == {"status": "ok", "version": "0.1.0", "protocolVersion": "2026-07-28", "transport": "http"}
        async with Client(f"{base}/mcp", mode="2026-07-28") as client:
            result = await client.call_tool("eco_ping", {})
        assert result.structured_content["transport"] == "http"
        assert result.structured_content["downloadsEnabled"] is False
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert out == b""
