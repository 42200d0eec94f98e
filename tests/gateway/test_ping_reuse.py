"""eco_ping reuses its last report only while everything it reports is unchanged (families/health.py)."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_gateway.server import build_server
from tests.gateway.conftest import make_cfg

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_ping_after_upstream_traffic_reports_the_new_rate_limit_not_the_reused_report(fresh_sim, active_config):
    cfg = make_cfg(server__transport="stdio", eco__base_url=fresh_sim.base_url, eco__graphql_url=fresh_sim.graphql_url,
                   eco__retries__max_attempts=1)
    active_config(cfg)
    async with Client(build_server(cfg), mode="2026-07-28") as client:
        first = (await client.call_tool("eco_ping", {})).structured_content
        again = (await client.call_tool("eco_ping", {})).structured_content
        await client.call_tool("eco_ping", {"check_api": True})
        after = (await client.call_tool("eco_ping", {})).structured_content
    assert again == first
    assert first["rateLimit"] is None
    # The probe's answer carried NEON's rate-limit headers: the next plain ping must show them.
    assert after["rateLimit"]["limit"] is not None and after["rateLimit"]["remaining"] is not None
    assert after["cache"] == first["cache"] and after["api"] is None
