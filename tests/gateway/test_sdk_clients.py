"""The SDK's own client against the real server: a real HTTP socket and a real stdio subprocess,
in the 2026-07-28 era and the 2025-11-25 (handshake) era."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.gateway.checks import assert_error, assert_valid_tool_result
from tests.gateway.conftest import PYTHON, REPO

ERAS = [("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")]


async def _exercise(client: Client, *, transport: str, version: str) -> None:
    assert client.protocol_version == version
    tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == sorted(t.name for t in tools)
    ping_tool = next(t for t in tools if t.name == "eco_ping")

    result = await client.call_tool("eco_ping", {})
    payload = assert_valid_tool_result(ping_tool, result)
    assert payload["pong"] == "ok"
    assert payload["transport"] == transport
    assert payload["protocolVersion"] == version

    camel = await client.call_tool("eco_ping", {"checkApi": False})
    assert_valid_tool_result(ping_tool, camel)

    bad = await client.call_tool("eco_ping", {"check_api": False, "verbose": True})
    err = assert_error(bad, "invalid_argument")
    assert "verbose" in err["message"] and "check_api" in err["message"]

    unknown = assert_error(await client.call_tool("eco_pingg", {}), "unknown_tool")
    assert unknown["details"]["didYouMean"][0] == "eco_ping"

    with pytest.raises(MCPError) as missing:
        await client.read_resource("eco://nope")
    assert missing.value.error.code == -32602
    assert missing.value.error.data["code"] == "not_found"


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_sdk_client_over_http_lists_calls_and_gets_protocol_errors(http_server, mode, version):
    with http_server() as srv:
        async with Client(srv.url, mode=mode) as client:
            await _exercise(client, transport="http", version=version)


@pytest.mark.parametrize(("mode", "version"), ERAS)
async def test_sdk_client_over_stdio_subprocess_lists_calls_and_gets_protocol_errors(stdio_env, mode, version):
    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=stdio_env)
    async with Client(params, mode=mode) as client:
        await _exercise(client, transport="stdio", version=version)


async def test_auto_mode_client_discovers_and_picks_the_modern_era_over_http(http_server):
    with http_server() as srv:
        async with Client(srv.url) as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_capabilities.tools is not None
            assert "eco_search_products" in (client.instructions or "")
