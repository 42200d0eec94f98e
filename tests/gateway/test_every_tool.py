"""Every registered tool, called through the gateway against the simulator, answers either an
error with a stable code or a result that validates against the tool's own output schema. New
tool families are covered the moment they are registered."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django import db
from mcp import Client

from mcp_gateway.registry import default_registry
from mcp_gateway.server import build_server
from tests.gateway.checks import outcome_of
from tests.gateway.conftest import make_cfg

pytestmark = pytest.mark.django_db(transaction=True)


async def test_every_tool_answers_a_schema_valid_result_or_a_stable_error(fresh_sim, active_config):
    cfg = make_cfg(server__transport="stdio", eco__base_url=fresh_sim.base_url, eco__graphql_url=fresh_sim.graphql_url,
                   eco__retries__max_attempts=1, downloads__enabled=False)
    active_config(cfg)
    seen = {}
    async with Client(build_server(cfg), mode="2026-07-28") as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            seen[tool.name] = outcome_of(tool, await client.call_tool(tool.name, {}))
    # Tools read the ORM through sync_to_async's shared thread: close its connection, or the test
    # database cannot be dropped at the end of the session.
    await sync_to_async(db.connections.close_all)()
    assert set(seen) == set(default_registry().names())
    assert seen["eco_ping"] == "ok", seen
