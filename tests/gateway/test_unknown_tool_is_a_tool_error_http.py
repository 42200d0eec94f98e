"""A call to a tool the server does not have is a tool result with isError, as the spec's error
table says: code unknown_tool, the name, and the nearest tool names in details.didYouMean (each
one callable); through the SDK client over HTTP."""

from __future__ import annotations

from mcp import Client

from tests.gateway.checks import assert_error


async def test_an_unknown_tool_is_an_error_result_with_unknown_tool_and_suggestions(http_server):
    with http_server() as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("eco_pingg", {})
            err = assert_error(result, "unknown_tool")
            assert err["message"].startswith("name: ") and "eco_pingg" in err["message"], err
            assert err["details"]["name"] == "eco_pingg"
            assert err["details"]["didYouMean"][0] == "eco_ping" and set(err["details"]["didYouMean"]) <= listed
            assert err["hint"]
            follow = await client.call_tool(err["details"]["didYouMean"][0], {})
            assert not follow.is_error
