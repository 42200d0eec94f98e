"""eco_ping reports downloads as enabled only when eco_download_files is listed on the call's
transport: over HTTP the tool is neither listed nor run, so `true` would send
an agent to a tool it cannot call."""

from __future__ import annotations

from mcp_gateway.registry import default_registry


async def test_over_stdio_eco_ping_says_downloads_are_enabled_and_the_download_tool_is_listed(run_tool, sim_cfg):
    assert sim_cfg.downloads_enabled
    out = (await run_tool("eco_ping", transport="stdio")).ok
    assert out["downloadsEnabled"] is True and out["downloadDir"] == str(sim_cfg.download_dir)
    assert "eco_download_files" in {s.name for s in default_registry().listed(http=False)}


async def test_over_http_eco_ping_says_downloads_are_disabled_because_the_download_tool_is_not_listed(run_tool,
                                                                                                       sim_cfg):
    # The configuration alone would allow them (a stdio configuration serving an HTTP call).
    assert sim_cfg.downloads_enabled
    out = (await run_tool("eco_ping", transport="http")).ok
    assert out["downloadsEnabled"] is False and out["downloadDir"] is None
    assert "eco_download_files" not in {s.name for s in default_registry().listed(http=True)}
