"""What a new user's first stdio start meets, through the SDK's client over a real stdio
subprocess: a relative ECO_MCP_DATA_DIR is the checkout's folder whatever folder the desktop
client starts the server from, and the catalogs a search needs are built in the background once
the first answers are out, so the first search finds them built."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.gateway.conftest import PYTHON, REPO, stdio_env  # noqa: F401  (fixture)


def _params(stdio_env: dict[str, str], cwd: Path, **env: str) -> StdioServerParameters:  # noqa: F811
    return StdioServerParameters(command=PYTHON, args=[str(REPO / "manage.py"), "eco_mcp_stdio"], cwd=str(cwd),
                                 env={**stdio_env, **env})


async def test_a_relative_data_dir_is_the_checkouts_folder_whatever_the_clients_working_directory(
        stdio_env, tmp_path):  # noqa: F811
    relative = f"data/test-relative-{uuid.uuid4().hex[:8]}"
    try:
        async with Client(_params(stdio_env, tmp_path, ECO_MCP_DATA_DIR=relative), mode="2026-07-28") as client:
            assert "eco_ping" in {t.name for t in (await client.list_tools()).tools}
            assert not (await client.call_tool("eco_ping", {})).is_error
        assert (REPO / relative / "cache").is_dir()  # the kept tool listing went to the checkout
        assert not (tmp_path / relative).exists()
    finally:
        shutil.rmtree(REPO / relative, ignore_errors=True)


async def _ready(client: Client) -> dict[str, Any]:
    """eco_ping's catalog status once the catalogs are built (eco_ping asks the upstream nothing)."""
    with anyio.fail_after(90):
        while True:
            ping = (await client.call_tool("eco_ping", {})).structured_content
            if ping["catalog"]["ready"]:
                return ping
            await anyio.sleep(0.2)


async def test_the_catalogs_are_built_in_the_background_at_start_and_the_first_search_asks_nothing(
        stdio_env, sim, tmp_path):  # noqa: F811
    # An empty SQLite catalog of its own (no DATABASE_URL): nothing is built before this start.
    env = {k: v for k, v in stdio_env.items() if k != "DATABASE_URL"}
    params = _params(env, REPO, ECO_MCP_DATA_DIR=str(tmp_path), ECO_MCP_ECO__BASE_URL=sim.base_url,
                     ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url)
    async with Client(params, mode="2026-07-28") as client:
        await client.list_tools()
        ping = await _ready(client)  # no tool but eco_ping was called: the build ran on its own
        assert ping["catalog"]["catalogs"]["products"]["count"] > 0
        first = await client.call_tool("eco_search_products", {"query": "wind"})
    assert not first.is_error and first.structured_content["items"]
    assert first.meta["io.eco-mcp/upstream"]["requests"] == 0
