"""`--check` and `eco_ping(check_api=true)` run one probe (upstream.probe.api_check) and agree on
reachability and on whether the token was accepted. (Moved from tests/upstream/test_accounting.py
with eco_service/healthcheck.py, which the shared probe replaces.)"""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client

from mcp_gateway.health import check
from mcp_gateway.server import build_server
from tests.upstream.conftest import make_cfg, sim_env

UNKNOWN_TOKEN = "not-a-real-token-123456"


async def test_check_reports_reachability_latency_token_status_and_headroom(fresh_sim):
    cfg = make_cfg(sim_env(fresh_sim, ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token()))
    verdict = await check(cfg)
    assert verdict["reachable"] is True and verdict["latencyMs"] >= 0
    assert verdict["tokenStatus"] == "accepted" and verdict["tokenSource"] == "config"
    assert verdict["rateLimit"]["limit"] == 2000
    recs = fresh_sim.requests.matching("/taxonomy")
    assert len(recs) == 1 and recs[0].query == {"taxonTypeCode": "TICK", "limit": "1"}


async def test_check_flags_a_token_upstream_does_not_recognise(fresh_sim):
    cfg = make_cfg(sim_env(fresh_sim, ECO_MCP_ECO__API_TOKEN=UNKNOWN_TOKEN))
    verdict = await check(cfg)
    assert verdict["reachable"] is True and verdict["tokenStatus"] == "not_recognised"


def test_check_from_the_command_line_reports_an_unreachable_upstream():
    cfg = make_cfg({"ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0", "ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS": "1"})
    verdict = asyncio.run(check(cfg))
    assert verdict["reachable"] is False and verdict["error"]["code"] == "upstream_unavailable"
    assert verdict["tokenStatus"] == "none"


def test_a_token_not_sent_on_the_probe_is_neither_accepted_nor_refused(fresh_sim):
    # Over HTTP tokens go only to token-only endpoints by default, and the probe is public: the
    # upstream's anonymous limit then says nothing about the token.
    cfg = make_cfg(sim_env(fresh_sim, ECO_MCP_ECO__API_TOKEN=fresh_sim.issue_token(),
                           ECO_MCP_SERVER__TRANSPORT="http"))
    verdict = asyncio.run(check(cfg))
    assert verdict["reachable"] is True
    assert (verdict["tokenSent"], verdict["tokenStatus"]) == (False, "not_sent")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("token", ["issued", UNKNOWN_TOKEN])
async def test_eco_ping_and_check_agree_on_whether_the_token_was_accepted(fresh_sim, active_config, token, transport):
    token = fresh_sim.issue_token() if token == "issued" else token
    cfg = make_cfg(sim_env(fresh_sim, ECO_MCP_ECO__API_TOKEN=token, ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS="1",
                           ECO_MCP_SERVER__TRANSPORT=transport, ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP="true"))
    verdict = await check(cfg)
    # eco_ping's upstream client is built from the active configuration.
    active_config(cfg)
    async with Client(build_server(cfg), mode="2026-07-28") as client:
        ping = (await client.call_tool("eco_ping", {"check_api": True})).structured_content
    assert ping["api"]["reachable"] is verdict["reachable"] is True
    assert ping["tokenSource"] == verdict["tokenSource"] == "config"
    expected = {"accepted": True, "not_recognised": False}.get(verdict["tokenStatus"])
    assert ping["api"].get("tokenAccepted") is expected
    unknown_token = token == UNKNOWN_TOKEN
    assert verdict["tokenStatus"] == ("not_sent" if transport == "http" else
                                      "not_recognised" if unknown_token else "accepted")


@pytest.mark.parametrize("variable", ["ECO_TOKEN", "ECO_API_TOKEN"])
def test_check_from_the_command_line_names_the_variable_the_token_came_from(fresh_sim, variable, tmp_path):
    import json
    import os
    import subprocess

    from tests.gateway.conftest import PYTHON, REPO

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))}
    env.update(sim_env(fresh_sim, **{variable: fresh_sim.issue_token()}), ECO_MCP_DATA_DIR=str(tmp_path))
    proc = subprocess.run([PYTHON, "manage.py", "eco_mcp_stdio", "--check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert (verdict["tokenSource"], verdict["tokenFrom"], verdict["tokenStatus"]) == ("config", variable, "accepted")
