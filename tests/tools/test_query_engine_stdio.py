"""A desktop server survives any query: `manage.py eco_mcp_stdio` through the SDK's stdio client
takes the memory attacks of issue 41 in its engine workers, its own resident memory (read from
/proc) stays within 100 MB, the next query is answered, and its workers end with it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from mcp import Client

from tests.gateway.checks import assert_error
from tests.gateway.conftest import sim_stdio, stdio_env  # noqa: F401  (fixtures)
from tests.reliability.kill9_support import children, memory_kb
from tests.tables.query_support import stack_soil

MB = 1024


def _server_pid(downloads: Path) -> int:
    """The stdio server this test started: a child of this process serving `downloads`."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            env = (proc / "environ").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and f"ECO_MCP_DOWNLOADS__DIRECTORY={downloads}".encode() in env:
            return int(proc.name)
    raise AssertionError("no stdio server process found")


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


async def test_a_desktop_server_survives_the_memory_attacks_and_its_workers_end_with_it(stdio_env, sim, tmp_path):  # noqa: F811
    downloads = tmp_path / "downloads"
    ds_id, _ = stack_soil(downloads)
    params = sim_stdio(stdio_env, sim, sim.issue_token(), downloads)
    async with Client(params, mode="2026-07-28") as client:
        async def call(sql: str) -> object:
            return await client.call_tool("eco_query_tables", {"dataset_id": ds_id, "sql": sql})

        assert not (await call("SELECT count(*) AS n FROM ST_30_minute")).is_error
        pid = _server_pid(downloads)
        before = memory_kb(pid)
        workers = children(pid)
        assert workers  # started by the first query
        for got in await asyncio.gather(*(call("SELECT len(range(30000000)) AS n") for _ in range(3))):
            assert not got.is_error or assert_error(got, "query_too_large")
        for sql in ("SELECT len(range(200000000)) AS n", "SELECT length(repeat('x', 2000000000)) AS n"):
            assert "tables.engine_memory_mb" in assert_error(await call(sql), "query_too_large")["message"]
        after = memory_kb(pid)
        again = await call("SELECT count(*) AS n FROM sensor_positions")
        assert not again.is_error and again.structured_content["rows"] == [[3]]
        workers += children(pid)
    assert after["VmRSS"] - before["VmRSS"] <= 100 * MB and after["VmHWM"] - before["VmHWM"] <= 100 * MB
    deadline = time.monotonic() + 30
    while any(_alive(w) for w in workers):
        assert time.monotonic() < deadline, "an engine worker outlived its server"
        await asyncio.sleep(0.1)
