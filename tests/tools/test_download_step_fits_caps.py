"""The download eco_list_files suggests is one the download tool takes: through the SDK's real
client over a stdio subprocess (the only transport that lists eco_download_files), a listing of
more files than one download may hold suggests the first site's first months that fit, says so,
and that call, followed as given, downloads them; when not even one site-month fits, no download
is suggested and a note says how to narrow."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

from pathlib import Path

from mcp import Client

from tests.downloads.conftest import call_tool, dl_dir, sim_token  # noqa: F401  (fixtures)
from tests.gateway.conftest import sim_stdio, stdio_env  # noqa: F401  (fixtures)

SOIL = "DP1.00041.001"  # a sensor product: a few dozen files per site-month
MAX_FILES = 40


async def test_a_listing_above_the_download_cap_suggests_a_narrower_download_that_succeeds_over_stdio(
        stdio_env, sim, tmp_path: Path):
    params = sim_stdio(stdio_env, sim, sim.issue_token(exp_s=3600), tmp_path / "downloads",
                       ECO_MCP_DOWNLOADS__MAX_FILES_PER_CALL=str(MAX_FILES))
    selection = {"product": SOIL, "site_codes": ["HARV", "BART"], "start_month": "2020-04", "end_month": "2020-06"}
    async with Client(params, mode="2026-07-28") as client:
        listed = await client.call_tool("eco_list_files", {**selection, "detail": "summary"})
        assert not listed.is_error, listed.structured_content
        body = listed.structured_content
        total = body["summary"]["files"]
        assert total > MAX_FILES
        [step] = [s for s in body["nextSteps"] if s["tool"] == "eco_download_files"]
        args = step["arguments"]
        assert args["site_codes"] == ["BART"] and args["start_month"] == "2020-04", args
        assert f"at most {MAX_FILES} files" in step["why"] and "call it again" in step["why"], step
        done = await client.call_tool("eco_download_files", args)
        assert not done.is_error, done.structured_content
        got = done.structured_content
        assert 0 < got["requested"] <= MAX_FILES and f"first {got['requested']} of these {total} files" in step["why"]


async def test_when_not_even_one_site_month_fits_no_download_is_suggested_and_a_note_says_how_to_narrow(call_tool):
    selection = {"product": SOIL, "site_codes": ["HARV"], "start_month": "2020-06", "detail": "summary"}
    body = (await call_tool("eco_list_files", selection, downloads__max_files_per_call=2)).ok
    assert body["summary"]["files"] > 2
    assert not [s for s in body["nextSteps"] if s["tool"] == "eco_download_files"]
    assert any("narrow with kind, table" in n for n in body["notes"]), body["notes"]
    narrowed = (await call_tool("eco_list_files", {**selection, "name_contains": "readme"},
                                downloads__max_files_per_call=2)).ok
    [step] = [s for s in narrowed["nextSteps"] if s["tool"] == "eco_download_files"]
    assert step["arguments"]["name_contains"] == "readme"
