"""eco_list_files with include_provisional false says which months hold only provisional data (left
out on request), not that they have no data: through the SDK's real MCP client over HTTP, for one
site-month (NEON's GET listing) and for a window over two sites (its POST query)."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.downloads.conftest import sim_token, token_config  # noqa: F401  (fixtures)
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)

SOIL = "DP1.00041.001"


async def test_months_with_only_provisional_data_are_named_as_such_when_it_is_left_out_over_http(
        http_server, sim_cfg, sim, sim_token, active_config):
    cfg = token_config(sim, None, server__transport="http", server__allow_insecure_header_token=True)
    active_config(cfg)
    harv, bart = sim.world.availability(SOIL)["HARV"], sim.world.availability(SOIL)["BART"]
    newest = harv[-1]  # newer than the latest release: provisional only
    assert newest in bart
    released = harv[-4]
    with http_server(cfg) as srv:
        transport = streamable_http_client(srv.url, http_client=create_mcp_http_client(headers={"X-API-Token": sim_token}))
        async with Client(transport, mode="2026-07-28") as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "eco_list_files")

            async def notes(arguments: dict[str, Any]) -> list[str]:
                body = assert_valid_tool_result(tool, await client.call_tool("eco_list_files", arguments))
                return body["notes"]

            one = await notes({"product": SOIL, "site_codes": ["HARV"], "start_month": newest,
                               "include_provisional": False})
            assert any("provisional" in n and f"HARV {newest}" in n for n in one), one
            assert not any(n.startswith("No data for") for n in one), one
            window = await notes({"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": released,
                                  "end_month": newest, "include_provisional": False, "detail": "summary"})
            [said] = [n for n in window if "provisional" in n]
            assert f"HARV {newest}" in said and f"BART {newest}" in said, window
            assert not any(f"{newest}" in n for n in window if n.startswith("No data for")), window
            # With provisional data included the same months are listed, and no note is needed.
            kept = await notes({"product": SOIL, "site_codes": ["HARV"], "start_month": newest})
            assert not any("provisional" in n or n.startswith("No data for") for n in kept), kept
