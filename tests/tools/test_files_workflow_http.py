"""Over HTTP, through the SDK's real MCP client: eco_list_files answers with the caller's token
header; its nextSteps do not offer eco_download_files, which HTTP neither lists nor runs."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.downloads.conftest import sim_token, token_config  # noqa: F401  (fixtures)
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)


async def test_list_files_over_http_offers_no_download_step_and_the_download_tool_is_refused(
        http_server, sim_cfg, sim, sim_token, active_config):
    cfg = token_config(sim, None, server__transport="http", server__allow_insecure_header_token=True)
    active_config(cfg)
    with http_server(cfg) as srv:
        # The caller's own token, in the header HTTP callers send it in.
        transport = streamable_http_client(srv.url, http_client=create_mcp_http_client(headers={"X-API-Token": sim_token}))
        async with Client(transport, mode="2026-07-28") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "eco_list_files" in tools and "eco_download_files" not in tools
            sim.requests.clear()
            listed = assert_valid_tool_result(tools["eco_list_files"], await client.call_tool(
                "eco_list_files", {"product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"}))
            assert listed["files"] and all(f["url"] for f in listed["files"])
            gets = sim.requests.matching(r"^/api/v0/data/")
            assert gets and all(g.headers.get("x-api-token") == sim_token for g in gets)
            # HTTP offers no download step (the signed URLs are the download); asked anyway, it is refused.
            assert "eco_download_files" not in {s["tool"] for s in listed["nextSteps"]}
            refused = await client.call_tool("eco_download_files", {
                "product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"})
            assert refused.is_error and refused.structured_content["error"]["code"] == "not_available_in_http_mode"
