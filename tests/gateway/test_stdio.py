"""The stdio command as a real subprocess: stdout carries only JSON-RPC lines, logs go to stderr."""

from __future__ import annotations

import json
import subprocess
import tempfile

from tests.gateway.conftest import PYTHON, REPO
from tests.gateway.wire import modern_request

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


class Finished:
    def __init__(self, stdout: str, stderr: str) -> None:
        self.stdout, self.stderr = stdout, stderr


def _run(lines: list[dict], env: dict[str, str], *, replies: int) -> Finished:
    """Send the lines, keep stdin open until `replies` lines came back (EOF ends the server and
    cancels what is still running), then close and collect everything."""
    with tempfile.TemporaryFile("w+") as errfile:
        proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio", "--log-level", "debug"], cwd=REPO, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile, text=True)
        assert proc.stdin and proc.stdout
        for m in lines:
            proc.stdin.write(json.dumps(m) + "\n")
        proc.stdin.flush()
        got = [proc.stdout.readline() for _ in range(replies)]
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=60)
        errfile.seek(0)
        return Finished("".join(got) + rest, errfile.read())


def test_stdout_carries_only_json_rpc_lines_while_logs_go_to_stderr(stdio_env):
    listing, _ = modern_request("tools/list", rid=1)
    call, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=2)
    bad, _ = modern_request("tools/call", {"name": "eco_nope", "arguments": {}}, rid=3)
    proc = _run([listing, call, bad], stdio_env, replies=3)
    out_lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(out_lines) == 3
    messages = [json.loads(line) for line in out_lines]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages}
    assert "eco_ping" in [t["name"] for t in by_id[1]["result"]["tools"]]
    assert by_id[2]["result"]["structuredContent"]["transport"] == "stdio"
    assert by_id[3]["result"]["isError"] and by_id[3]["result"]["structuredContent"]["error"]["code"] == "unknown_tool"
    assert "serving MCP on stdio" in proc.stderr


def test_a_handshake_era_client_is_served_on_stdio(stdio_env):
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    proc = _run([INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, listing], stdio_env, replies=2)
    messages = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert messages[0]["result"]["protocolVersion"] == "2025-11-25"
    assert "eco_ping" in [t["name"] for t in messages[1]["result"]["tools"]]


def test_a_token_in_the_environment_never_reaches_stdout_or_stderr(stdio_env):
    token = "env-token-should-stay-hidden-42"
    call, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=1)
    proc = _run([call], {**stdio_env, "ECO_TOKEN": token}, replies=1)
    body = json.loads(proc.stdout.splitlines()[0])["result"]["structuredContent"]
    assert (body["tokenConfigured"], body["tokenSource"]) == (True, "config")
    assert token not in proc.stdout and token not in proc.stderr


def test_unreadable_lines_get_json_rpc_errors_and_the_server_keeps_serving(stdio_env):
    listing, _ = modern_request("tools/list", rid=7)
    with tempfile.TemporaryFile("w+") as errfile:
        proc = subprocess.Popen([PYTHON, "manage.py", "eco_mcp_stdio"], cwd=REPO, env=stdio_env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errfile, text=True)
        assert proc.stdin and proc.stdout
        proc.stdin.write('{not json\n{"jsonrpc": "2.0", "id": 5}\n' + json.dumps(listing) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(3)]
        proc.stdin.close()
        proc.wait(timeout=60)
    assert replies[0] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert replies[1]["id"] is None and replies[1]["error"]["code"] == -32600
    assert replies[2]["id"] == 7 and "tools" in replies[2]["result"]


def test_a_client_that_sends_a_call_and_closes_its_input_still_gets_the_answer(stdio_env, sim):
    # eco_search_products on a cold catalog builds it first (seconds of upstream work), so the
    # call is still running when stdin closes; before the fix the server exited without answering.
    call, _ = modern_request("tools/call", {"name": "eco_search_products", "arguments": {"query": "temperature"}},
                             rid=7)
    ping, _ = modern_request("tools/call", {"name": "eco_ping", "arguments": {}}, rid=8)
    env = {**stdio_env, "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url}
    proc = _run([call, ping], env, replies=0)
    messages = {m["id"]: m for m in (json.loads(line) for line in proc.stdout.splitlines() if line.strip())}
    assert set(messages) == {7, 8}, proc.stderr[-2000:]
    assert "result" in messages[7] and "result" in messages[8]
