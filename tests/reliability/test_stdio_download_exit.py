"""A stdio server that made downloads ends cleanly when its client goes: the download wire's
connections are closed while the event loop still runs, not found open by the collector at exit
(where aiohttp logs each as an error on the agent's stderr)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.reliability.kill9_support import PYTHON, REPO

ARGS = {"product": "DP1.10003.001", "site_codes": ["HARV"], "start_month": "2020-05"}


async def test_a_stdio_server_ends_after_a_download_with_no_connection_left_open(
        sim_data_dir: Any, sim: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy2(sim_data_dir.path / "eco.sqlite3", data / "eco.sqlite3")
    env = {**sim_data_dir.env, "ECO_MCP_DATA_DIR": str(data), "ECO_TOKEN": sim.issue_token(exp_s=3600),
           "ECO_MCP_DOWNLOADS__DIRECTORY": str(tmp_path / "downloads"),
           "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"}
    stderr = tmp_path / "stderr.txt"  # what the agent's client would show its user
    params = StdioServerParameters(command="/bin/sh", cwd=str(REPO), env=env,
                                   args=["-c", f'exec "{PYTHON}" manage.py eco_mcp_stdio 2>"{stderr}"'])
    async with Client(params, mode="2026-07-28") as client:
        result = await client.call_tool("eco_download_files", ARGS)
        assert not result.is_error, result.content
        assert result.structured_content["totals"]["downloaded"] > 1
    err = stderr.read_text()
    assert "serving MCP on stdio" in err
    assert "Unclosed" not in err and " ERROR " not in err, err[-3000:]
