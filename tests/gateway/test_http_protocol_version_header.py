"""An unsupported MCP-Protocol-Version header is -32022 whatever the body holds:
without a modern envelope the SDK answered -32602 about params._meta instead."""

from __future__ import annotations

import httpx

from tests.gateway.wire import ACCEPT, modern_request

PLAIN = {"Accept": ACCEPT, "Content-Type": "application/json"}
SERVED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def test_an_unsupported_version_header_without_a_modern_envelope_is_32022_naming_the_served_versions(http_server):
    legacy_body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    with http_server() as srv:
        resp = httpx.post(srv.url, json=legacy_body, headers={**PLAIN, "MCP-Protocol-Version": "2099-01-01"})
        padded = httpx.post(srv.url, json={**legacy_body, "id": "x"},
                            headers={**PLAIN, "MCP-Protocol-Version": "1.0"})
        note = httpx.post(srv.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                          headers={**PLAIN, "MCP-Protocol-Version": "2099-01-01"})
    assert resp.status_code == 400
    body = resp.json()
    assert body["id"] == 7 and body["error"]["code"] == -32022, body
    assert body["error"]["data"] == {"supported": SERVED, "requested": "2099-01-01"}
    assert "MCP-Protocol-Version" in body["error"]["message"]
    assert padded.json()["id"] == "x" and padded.json()["error"]["code"] == -32022
    assert note.status_code == 400 and note.json()["error"]["code"] == -32022 and note.json()["id"] is None


def test_a_supported_version_header_still_reaches_the_sdk_in_either_era(http_server):
    with http_server() as srv:
        # A legacy request after the handshake carries its negotiated version in the header.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        legacy = httpx.post(srv.url, json=init, headers={**PLAIN, "MCP-Protocol-Version": "2025-06-18"})
        body, headers = modern_request("tools/list")
        modern = httpx.post(srv.url, json=body, headers=headers)
        # A modern envelope naming an unsupported version is still the SDK's -32022.
        body, headers = modern_request("tools/list", version="2099-01-01")
        sdk = httpx.post(srv.url, json=body, headers=headers)
    assert legacy.status_code == 200 and "2025-06-18" in legacy.text
    assert modern.status_code == 200 and '"tools"' in modern.text
    assert sdk.status_code == 400 and sdk.json()["error"]["code"] == -32022
