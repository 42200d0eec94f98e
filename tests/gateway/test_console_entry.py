"""The `eco-mcp` console command the package installs serves MCP on stdio, from any folder: it is
what a desktop client's configuration points at (.venv/bin/eco-mcp)."""

from __future__ import annotations

import sys
import tomllib
from importlib import import_module

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.gateway.conftest import PYTHON, REPO

# What the script pip writes for a [project.scripts] entry does, for the entry point declared.
ENTRY = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["eco-mcp"]
MODULE, FUNCTION = ENTRY.split(":")
WRAPPER = f"import sys; from {MODULE} import {FUNCTION}; sys.argv[0] = 'eco-mcp'; sys.exit({FUNCTION}())"


def test_the_package_declares_the_eco_mcp_command_and_it_resolves():
    assert ENTRY == "eco_service.entry:main"
    assert callable(getattr(import_module(MODULE), FUNCTION))


async def test_eco_mcp_serves_the_tools_on_stdio_started_from_another_folder(stdio_env, tmp_path):
    params = StdioServerParameters(command=PYTHON, args=["-c", WRAPPER], env=stdio_env, cwd=str(tmp_path))
    async with Client(params, mode="2026-07-28") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        ping = await client.call_tool("eco_ping", {})
    assert {"eco_ping", "eco_search_products", "eco_download_files"} <= tools
    assert ping.structured_content["transport"] == "stdio"


def test_eco_mcp_version_answers_like_the_manage_py_command(stdio_env, tmp_path):
    import subprocess

    out = subprocess.run([PYTHON, "-c", WRAPPER, "--version"], cwd=tmp_path, env=stdio_env, capture_output=True,
                         text=True, timeout=120)
    via_manage = subprocess.run([sys.executable, str(REPO / "manage.py"), "eco_mcp_stdio", "--version"],
                                cwd=tmp_path, env=stdio_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 == via_manage.returncode, out.stderr
    assert out.stdout == via_manage.stdout and out.stdout.strip()
