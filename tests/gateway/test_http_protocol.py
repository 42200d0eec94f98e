"""Protocol cases over a real socket with hand-built requests: what a misbehaving or foreign
client sees."""

from __future__ import annotations

import httpx

from tests.gateway.wire import ACCEPT, modern_request, reply


def test_mcp_method_header_disagreeing_with_the_body_is_32020_with_http_400(http_server):
    body, headers = modern_request("tools/list")
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers={**headers, "Mcp-Method": "prompts/list"})
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32020


def test_mcp_name_header_disagreeing_with_the_tool_is_32020(http_server):
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers={**headers, "Mcp-Name": "eco_other"})
    assert resp.json()["error"]["code"] == -32020


def test_version_header_differing_from_the_envelope_is_32020(http_server):
    body, headers = modern_request("tools/list", version="2026-07-28")
    headers["MCP-Protocol-Version"] = "2099-01-01"
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    assert resp.json()["error"]["code"] == -32020


def test_unsupported_protocol_version_is_32022_naming_the_supported_ones(http_server):
    body, headers = modern_request("tools/list", version="2099-01-01")
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    err = resp.json()["error"]
    assert err["code"] == -32022
    assert "2026-07-28" in err["data"]["supported"]


def test_discover_lists_the_legacy_versions_too_with_a_public_cache_hint(http_server):
    body, headers = modern_request("server/discover")
    with http_server() as srv:
        result = reply(httpx.post(srv.url, json=body, headers=headers))["result"]
    assert result["supportedVersions"] == ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert result["ttlMs"] == 300000 and result["cacheScope"] == "public"


def test_list_methods_carry_the_spec_cache_hints(http_server):
    expected = {"tools/list": 300000, "resources/list": 3600000, "resources/templates/list": 3600000,
                "prompts/list": 86400000}
    got = {}
    with http_server() as srv:
        for method in expected:
            body, headers = modern_request(method)
            result = reply(httpx.post(srv.url, json=body, headers=headers))["result"]
            got[method] = (result["ttlMs"], result["cacheScope"])
    assert got == {m: (ttl, "public") for m, ttl in expected.items()}


def test_malformed_json_is_a_parse_error(http_server):
    _, headers = modern_request("tools/list")
    with http_server() as srv:
        resp = httpx.post(srv.url, content=b"{not json", headers=headers)
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32700


def test_a_batch_or_an_envelope_without_method_is_an_invalid_request(http_server):
    _, headers = modern_request("tools/list")
    with http_server() as srv:
        batch = httpx.post(srv.url, json=[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], headers=headers)
        no_method = httpx.post(srv.url, json={"jsonrpc": "2.0", "id": 1}, headers=headers)
    assert batch.json()["error"]["code"] == -32600
    assert no_method.json()["error"]["code"] == -32600


def test_unknown_tool_is_an_error_result_with_code_unknown_tool_and_did_you_mean(http_server):
    body, headers = modern_request("tools/call", {"name": "eco_pnig", "arguments": {}})
    with http_server() as srv:
        result = reply(httpx.post(srv.url, json=body, headers=headers))["result"]
    assert result["isError"] is True
    err = result["structuredContent"]["error"]
    assert err["code"] == "unknown_tool"
    assert err["details"]["didYouMean"][0] == "eco_ping"


def test_unknown_resource_is_32602_with_not_found_the_uri_and_did_you_mean(http_server):
    uri = "eco://guide/nope"
    body, headers = modern_request("resources/read", {"uri": uri})
    with http_server() as srv:
        err = reply(httpx.post(srv.url, json=body, headers=headers))["error"]
    assert err["code"] == -32602
    assert err["data"]["code"] == "not_found"
    assert err["data"]["uri"] == uri
    assert isinstance(err["data"]["didYouMean"], list)


def test_a_legacy_version_header_is_served_in_the_legacy_era_even_with_a_modern_envelope(http_server):
    body, headers = modern_request("tools/list")
    headers["MCP-Protocol-Version"] = "2025-11-25"
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    msg = reply(resp)
    assert "eco_ping" in [t["name"] for t in msg["result"]["tools"]]
    # Legacy results carry no 2026 fields.
    assert "resultType" not in msg["result"]


def test_a_legacy_initialize_handshake_works_without_a_session(http_server):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    with http_server() as srv:
        resp = httpx.post(srv.url, json=init, headers=headers)
    msg = reply(resp)
    assert msg["result"]["protocolVersion"] == "2025-11-25"
    assert msg["result"]["serverInfo"]["name"] == "eco-mcp"
    assert "mcp-session-id" not in resp.headers


def test_resources_read_without_an_mcp_name_header_is_32020(http_server):
    body, headers = modern_request("resources/read", {"uri": "eco://guide/agent-workflow"})
    del headers["Mcp-Name"]
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32020
