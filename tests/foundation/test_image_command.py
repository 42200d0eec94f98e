"""The image's web command (the Dockerfile's CMD with its ENV, as compose runs it), started here
on loopback: it believes no client's X-Forwarded-For, every access log line goes through the
redacting filter (a token in a query string is masked, on stdout and stderr alike), and request
headers have their read deadline (server.header_read_timeout_s)."""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CANARY = "canary-image-token-" + uuid.uuid4().hex[:12]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def image_env_and_cmd() -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    cmd: list[str] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            env.update(item.split("=", 1) for item in shlex.split(line[4:]))
        elif line.startswith("CMD "):
            cmd = json.loads(line[4:])
    return env, cmd


def test_compose_runs_the_web_command_of_the_image():
    web = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["web"]
    assert web["command"] == image_env_and_cmd()[1]


def test_the_image_command_trusts_no_forwarded_header_masks_tokens_in_access_lines_and_times_out_headers(tmp_path):
    image_env, cmd = image_env_and_cmd()
    port = _free_port()
    cmd = [str(BIN / cmd[0]), *cmd[1:]]
    cmd[cmd.index("--host") + 1], cmd[cmd.index("--port") + 1] = "127.0.0.1", str(port)
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), **image_env,
           "ECO_MCP_DATA_DIR": str(tmp_path / "data"), "DJANGO_SECRET_KEY": uuid.uuid4().hex * 2,
           "ECO_TOKEN": CANARY, "ECO_MCP_CACHE__PREWARM": "false", "ECO_MCP_SERVER__HEADER_READ_TIMEOUT_S": "1",
           # No upstream in this test: nothing may be fetched from NEON.
           "ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0", "ECO_MCP_ECO__GRAPHQL_URL": "http://127.0.0.1:9/graphql"}
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out.open("wb"), stderr=err.open("wb"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise AssertionError(f"the web command did not start: {err.read_text()[-3000:]}") from None
                time.sleep(0.2)
        resp = httpx.get(f"{base}/healthz", params={"apiToken": CANARY},
                         headers={"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}, timeout=10)
        assert resp.status_code == 200
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # never finished
            late = sock.recv(65536)
        assert late.startswith(b"HTTP/1.1 408 ")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    logs = out.read_text() + err.read_text()
    assert CANARY not in logs
    access = [line for line in logs.splitlines() if '"GET /healthz?apiToken=' in line]
    assert len(access) == 1, logs[-3000:]
    assert "apiToken=********" in access[0]
    # The peer of the connection, not what the request claimed.
    assert re.search(r"127\.0\.0\.1:\d+ - ", access[0]) and "203.0.113.9" not in logs
