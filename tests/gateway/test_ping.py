"""eco_ping against the NEON simulator over real sockets."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_gateway.registry import default_registry
from mcp_gateway.server import build_server
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import make_cfg

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sim_cfg(fresh_sim, active_config):
    def make(env=None, **flags):
        cfg = make_cfg(env=env, server__transport="stdio", eco__base_url=fresh_sim.base_url,
                       eco__graphql_url=fresh_sim.graphql_url, eco__retries__max_attempts=1, **flags)
        # The upstream client is built from the active configuration.
        active_config(cfg)
        return cfg

    return make


async def _ping(cfg, **args):
    tool = default_registry().get("eco_ping").tool
    async with Client(build_server(cfg), mode="2026-07-28") as client:
        result = await client.call_tool("eco_ping", args)
    return tool, result


async def test_check_api_makes_one_uncached_taxonomy_request_each_time(sim_cfg, fresh_sim):
    cfg = sim_cfg()
    tool, first = await _ping(cfg, check_api=True)
    _, second = await _ping(cfg, check_api=True)
    body = assert_valid_tool_result(tool, first)
    assert body["api"]["reachable"] is True
    assert body["source"]["endpoints"] == ["GET /taxonomy"]
    assert fresh_sim.requests.count("/taxonomy") == 2
    assert first.meta["io.eco-mcp/upstream"]["requests"] == 1
    assert second.structured_content["rateLimit"]["limit"] is not None


async def test_without_check_api_no_upstream_request_is_made(sim_cfg, fresh_sim):
    tool, result = await _ping(sim_cfg())
    body = assert_valid_tool_result(tool, result)
    assert body["api"] is None
    assert fresh_sim.requests.count("") == 0
    assert body["catalog"]["ready"] is False and body["nextSteps"][0]["arguments"] == {"check_api": True}


async def test_an_upstream_outage_is_reported_in_api_not_raised(sim_cfg, fresh_sim):
    fresh_sim.faults.add(kind="status", route="/taxonomy", status=503)
    tool, result = await _ping(sim_cfg(), check_api=True)
    body = assert_valid_tool_result(tool, result)
    assert body["api"]["reachable"] is False
    assert body["api"]["error"]


async def test_a_configured_token_is_reported_by_source_and_never_shown(sim_cfg, fresh_sim):
    token = fresh_sim.issue_token()
    tool, result = await _ping(sim_cfg(env={"ECO_TOKEN": token}), check_api=True)
    body = assert_valid_tool_result(tool, result)
    assert (body["tokenConfigured"], body["tokenSource"]) == (True, "config")
    assert body["api"]["tokenAccepted"] is True
    assert token not in result.content[0].text and token not in str(result.meta)
    assert result.meta["io.eco-mcp/upstream"]["identity"].startswith("tok-")
