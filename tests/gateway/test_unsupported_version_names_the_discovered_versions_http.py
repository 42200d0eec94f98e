"""Every -32022 (unsupported protocol version) names in `data.supported` the versions
server/discover lists, whoever answers it: the gateway for an unsupported header, the SDK for a
modern envelope naming an unsupported version (it named only the modern revision), over HTTP and
over stdio."""

from __future__ import annotations

import json
import subprocess

import httpx
from mcp import Client

from tests.gateway.conftest import PYTHON, REPO
from tests.gateway.wire import ACCEPT, modern_request


async def _discovered(url: str) -> list[str]:
    async with Client(url, mode="2026-07-28") as client:
        # The pinned client adopted its version without a probe: ask the server itself.
        return list((await client.session.send_discover("2026-07-28"))["supportedVersions"])


async def test_every_32022_over_http_lists_what_server_discover_lists(http_server):
    with http_server() as srv:
        discovered = await _discovered(srv.url)
        body, headers = modern_request("tools/list", version="2099-01-01")
        enveloped = httpx.post(srv.url, json=body, headers=headers)
        plain = httpx.post(srv.url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                           headers={"Accept": ACCEPT, "Content-Type": "application/json",
                                    "MCP-Protocol-Version": "2099-01-01"})
    assert len(discovered) > 1 and "2025-11-25" in discovered
    for resp in (enveloped, plain):
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == -32022, err
        assert err["data"]["supported"] == discovered, err
        assert err["data"]["requested"] == "2099-01-01"


def test_a_32022_over_stdio_lists_what_server_discover_lists(stdio_env):
    discover, _ = modern_request("server/discover", rid=1)
    unsupported, _ = modern_request("tools/list", version="2099-01-01", rid=2)
    script = "".join(json.dumps(m) + "\n" for m in (discover, unsupported))
    proc = subprocess.run([PYTHON, "manage.py", "eco_mcp_stdio"], cwd=REPO, env=stdio_env, input=script,
                          capture_output=True, text=True, timeout=120)
    by_id = {m["id"]: m for m in (json.loads(line) for line in proc.stdout.splitlines() if line.strip())}
    err = by_id[2]["error"]
    assert err["code"] == -32022, err
    assert err["data"]["supported"] == by_id[1]["result"]["supportedVersions"]


def test_a_modern_envelope_naming_a_handshake_version_over_stdio_is_not_refused_by_a_list_naming_it(stdio_env):
    discover, _ = modern_request("server/discover", rid=1)
    old_era, _ = modern_request("tools/list", version="2025-06-18", rid=2)
    late_init = {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    script = "".join(json.dumps(m) + "\n" for m in (discover, old_era, late_init))
    proc = subprocess.run([PYTHON, "manage.py", "eco_mcp_stdio"], cwd=REPO, env=stdio_env, input=script,
                          capture_output=True, text=True, timeout=120)
    by_id = {m["id"]: m for m in (json.loads(line) for line in proc.stdout.splitlines() if line.strip())}
    served = by_id[1]["result"]["supportedVersions"]
    for rid in (2, 3):
        err = by_id[rid]["error"]
        assert err["code"] == -32022 and err["data"]["requested"] == "2025-06-18", err
        # Refused, and the list the refusal carries does not name it: it names what an envelope may
        # name, and the message where 2025-06-18 is served (a connection opening with initialize).
        assert "2025-06-18" not in err["data"]["supported"] and "2026-07-28" in err["data"]["supported"]
        assert "2025-06-18" in err["data"]["handshakeVersions"] and "initialize" in err["message"]
        assert sorted(err["data"]["supported"] + err["data"]["handshakeVersions"]) == sorted(served)
