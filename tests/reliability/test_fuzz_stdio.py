"""Schema fuzzing over stdio: every tool `manage.py eco_mcp_stdio` lists (eco_download_files
included, which HTTP never lists), called through the SDK's real MCP client with arguments drawn
from its own inputSchema, against the simulator, with a token and a download directory of the
test's own. Every answer must be a schema-valid success or an error from the spec's table (see
oracle.py), and no call may write anything outside the download directory, whatever path
traversal its arguments try.

Seeds as in test_fuzz_http: a fixed one and a rotating one (ECO_FUZZ_SEED, else today's date).
"""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp.client.stdio import stdio_client

from mcp_gateway.registry import default_registry
from tests.reliability.conftest import ServerLog, fresh_token, stdio_params
from tests.reliability.fuzzing import INVALID_KINDS
from tests.reliability.oracle import fuzz_client, rotating_seed, save_report
from tests.reliability.sim_vocabulary import vocabulary

FIXED_SEED = 22_002
CASES_PER_SEED = 600


def _tree(root: Path) -> dict[str, int | str]:
    """Every path under `root` with its size (files) or kind, to compare before and after."""
    return {str(p.relative_to(root)): "link" if p.is_symlink() else "dir" if p.is_dir() else p.stat().st_size
            for p in sorted(root.rglob("*"))}


async def test_every_tool_listed_over_stdio_answers_fuzzed_arguments_and_writes_only_in_its_download_dir(
        sim, sim_data_dir, tmp_path):
    seeds = [FIXED_SEED, rotating_seed()]
    print(f"fuzz seeds over stdio: {seeds} (replay the second with ECO_FUZZ_SEED={seeds[1]})")
    # Four levels deep, with a sibling and files around it: a '../../x' that escapes the download
    # directory still lands inside `box`, where the comparison below sees it.
    box = tmp_path / "box"
    downloads = box / "one" / "two" / "three" / "downloads"
    downloads.mkdir(parents=True)
    (box / "one" / "two" / "sibling").mkdir()
    (box / "one" / "keep.txt").write_text("must stay as it is")
    before = _tree(box)
    env = {**sim_data_dir.env, "ECO_TOKEN": fresh_token(sim), "ECO_MCP_DOWNLOADS__DIRECTORY": str(downloads),
           # The simulator's storage host; small caps keep real transfers short.
           "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost", "ECO_MCP_DOWNLOADS__MAX_FILES_PER_CALL": "5",
           "ECO_MCP_DOWNLOADS__MAX_BYTES_PER_CALL": str(20 * 2**20)}
    log = tmp_path / "stdio.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(stdio_params(env), errlog=errlog), mode="2026-07-28") as client:
            # Writing works here (so "nothing outside" below means something), and a plain escape
            # is refused; the fuzzing then throws its hostile dest_subdir values at the same tool.
            spec = vocabulary(sim)["eco_download_files"][0]
            wrote = await client.call_tool("eco_download_files", spec)
            escaped = await client.call_tool("eco_download_files", {**spec, "dest_subdir": "../../../escape"})
            tally, listed = await fuzz_client(client, [(s, CASES_PER_SEED) for s in seeds], vocabulary(sim),
                                              log_of=ServerLog(log).traceback_of)
    print(f"{tally.calls} calls in {tally.seconds:.1f} s; outcomes {dict(tally.by_outcome)}")
    save_report(tally, "stdio")
    assert not tally.failures, tally.report()
    assert tally.calls == 2 * CASES_PER_SEED
    assert listed == {s.name for s in default_registry().listed(http=False)}  # every declared tool
    assert "eco_download_files" in listed
    kinds = {tool: {k for (t, k) in tally.by_tool_kind if t == tool} for tool in listed}
    assert [t for t, k in kinds.items() if "valid" not in k or not k & INVALID_KINDS] == []
    assert not wrote.is_error and wrote.structured_content["files"], wrote.structured_content
    assert escaped.structured_content["error"]["code"] == "download_denied", escaped.structured_content
    after = _tree(box)
    assert any(isinstance(v, int) and p.startswith("one/two/three/downloads") for p, v in after.items())
    outside = {p: v for p, v in after.items() if not p.startswith("one/two/three/downloads")}
    assert outside == {p: v for p, v in before.items() if not p.startswith("one/two/three/downloads")}
    assert not any(p.endswith(".part") for p in after), "a .part file was left behind"
