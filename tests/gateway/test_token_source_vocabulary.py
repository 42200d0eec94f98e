"""--print-config and eco_ping name the token's source with the same words:
an operator comparing the two must not read "ECO_TOKEN" in one and "config" in the other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest

from eco_core.config import load_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from mcp_gateway.tokens import choose_token

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "vocab-TOKEN-0c41e2b7d9"


def _print_config(env: dict[str, str]) -> dict:
    out = subprocess.run(
        [sys.executable, "manage.py", "eco_mcp", "--print-config"],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", "ECO_MCP_DATA_DIR": "/tmp/eco-test-data", **env},
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["resolved"]


async def _ping_token_source(env: dict[str, str]) -> str:
    # The stdio server's own steps per tools/call: choose the token, then run the tool.
    cfg = load_config(env=env, warn=False)
    choice = choose_token(cfg, None)
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28", token_source=choice.source)
    ping = default_registry().get("eco_ping")
    assert ping is not None
    result = await execute(ping, {}, call, token=choice.token)
    assert isinstance(result, types.CallToolResult) and not result.is_error, result
    return result.structured_content["tokenSource"]


@pytest.mark.parametrize(("env", "expected"), [({"ECO_TOKEN": TOKEN}, "config"), ({}, "none")],
                         ids=["configured-token", "no-token"])
async def test_print_config_and_eco_ping_report_the_same_token_source(fake_catalog, env, expected):
    shown = _print_config(env)
    assert TOKEN not in json.dumps(shown)
    assert shown["token_source"] == await _ping_token_source(env) == expected
