"""kill -9 of the stdio server in the middle of an eco_download_files call, driven by the SDK's MCP
client against the simulator's storage over real sockets: no final file differs from the
upstream's MD5, and the same call on a new server resumes the partial file, skips the finished
ones, fetches the rest and leaves no `.part` behind.

At the kill, one transfer was cut by the simulator half-way (`truncate`: its `.part` holds the
first half), the two smallest files had landed, and every other transfer was still waiting for
storage to answer (`latency`): the call was in flight, with files in each state.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from downloads.manifest import NAME as MANIFEST
from tests.reliability.kill9_support import HANG_S, PYTHON, REPO, kill9

BIRDS, SITE, MONTH = "DP1.10003.001", "HARV", "2020-05"  # eleven small files in the simulator
ARGS = {"product": BIRDS, "site_codes": [SITE], "start_month": MONTH}


def upstream_files(sim: Any) -> dict[str, bytes]:
    files = sim.state.files
    served = sim.world.release_for_month(BIRDS, SITE, MONTH, None)
    return {s.name: files.content(s) for s in files.package_files(BIRDS, SITE, MONTH, "basic", served)}


def _stdio_server_pid() -> int:
    """The server the SDK client spawned: this process's one `eco_mcp_stdio` child."""
    found = [p.pid for p in psutil.Process().children(recursive=True)
             if any("eco_mcp_stdio" in part for part in p.cmdline())]
    assert len(found) == 1, found
    return found[0]


async def _until(probe: Callable[[], bool], what: str, call: asyncio.Task[Any]) -> None:
    """Poll without blocking the loop the SDK client runs on; the call must still be running."""
    deadline = time.monotonic() + HANG_S
    while not probe():
        assert not call.done(), f"the call ended before {what}: {call.result() if not call.exception() else ''}"
        assert time.monotonic() < deadline, f"no sign of {what} after {HANG_S:.0f} s"
        await asyncio.sleep(0.02)


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def env(sim_data_dir: Any, sim: Any, tmp_path: Path) -> dict[str, str]:
    """The reliability suite's warm data folder, copied (so a killed server touches only this
    test's), a token with its own rate bucket, this test's download directory, and every
    transfer of the call allowed to run at once."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy2(sim_data_dir.path / "eco.sqlite3", data / "eco.sqlite3")
    return {**sim_data_dir.env, "ECO_MCP_DATA_DIR": str(data), "ECO_TOKEN": sim.issue_token(exp_s=3600 + 9),
            "ECO_MCP_DOWNLOADS__DIRECTORY": str(tmp_path / "downloads"),
            "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost", "ECO_MCP_ECO__MAX_CONCURRENCY": "16"}


async def test_a_server_killed_mid_download_leaves_no_unverified_file_and_the_next_call_resumes_and_completes(
        env: dict[str, str], fresh_sim: Any, tmp_path: Path) -> None:
    want = upstream_files(fresh_sim)
    by_size = sorted(want, key=lambda n: len(want[n]))
    finished, cut = by_size[:2], by_size[-1]
    keep = len(want[cut]) // 2
    fresh_sim.faults.add("truncate", route=r"^/storage/", count=1, file=cut, keep=keep)
    others = "|".join(re.escape(n) for n in [*finished, cut])
    fresh_sim.faults.add("latency", route=rf"^/storage/(?!.*(?:{others}))", count=len(want) - 3, delay_s=60)
    folder = tmp_path / "downloads" / BIRDS / SITE / MONTH
    part = folder / (cut + ".part")
    params = StdioServerParameters(command=PYTHON, args=["manage.py", "eco_mcp_stdio"], cwd=str(REPO), env=env)

    async with Client(params, mode="2026-07-28") as client:
        call = asyncio.ensure_future(client.call_tool("eco_download_files", ARGS))
        await _until(lambda: (fresh_sim.requests.count(r"^/storage/") == len(want)
                              and part.is_file() and part.stat().st_size == keep
                              and all((folder / n).is_file() for n in finished)),
                     "every transfer started, one cut half-way and two landed", call)
        kill9(_stdio_server_pid())
        await asyncio.wait({call}, timeout=30)
        assert call.done() and call.exception() is not None, "the call answered although its server was killed"

    # Nothing unverified under a final name; a partial file is a true prefix of the upstream's.
    on_disk = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert on_disk[cut + ".part"] == want[cut][:keep]
    for name, data in on_disk.items():
        if name.endswith(".part"):
            assert want[name.removesuffix(".part")].startswith(data), name
        else:
            assert _md5(data) == _md5(want[name]), name
    assert set(finished) <= set(on_disk)

    fresh_sim.faults.clear()
    fresh_sim.requests.clear()
    async with Client(params, mode="2026-07-28") as client:
        result = await client.call_tool("eco_download_files", ARGS)
    assert not result.is_error, result.content
    body = result.structured_content
    status = {f["name"]: f["status"] for f in body["files"]}
    assert status[cut] == "resumed" and {status[n] for n in finished} == {"skipped"}
    assert {status[n] for n in want if n != cut and n not in finished} == {"downloaded"}
    assert all(f["verified"] and f["md5"] == _md5(want[f["name"]]) for f in body["files"])
    [resume] = fresh_sim.requests.matching(re.escape(cut) + "$")
    assert resume.headers["range"] == f"bytes={keep}-"
    # Every file whole under its final name, recorded in the manifest; no .part left anywhere.
    assert {p.name: _md5(p.read_bytes()) for p in folder.iterdir()} == {n: _md5(d) for n, d in want.items()}
    assert not list((tmp_path / "downloads").rglob("*.part"))
    manifest = json.loads((tmp_path / "downloads" / MANIFEST).read_text())["files"]
    assert {Path(k).name: v["md5"] for k, v in manifest.items()} == {n: _md5(d) for n, d in want.items()}
