"""A stack killed with SIGKILL while it writes a table leaves nothing half-written under a final
name, and the next call completes it: the service runs in a process of its own (the reliability
suite's data folder, catalogs built from the simulator), killed the moment a table's temporary
file appears, then run again to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import PYTHON, REPO, fresh_token, sim_data_dir  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

# Single-aspirated air temperature at CPER: three tower levels, 1-minute files of ~44,000 rows, so
# writing its 1-minute table takes long enough to be caught half-way.
ARGS = {"product": "DP1.00002.001", "site_codes": ["CPER"], "start_month": "2023-02", "end_month": "2023-04",
        "tables": ["SAAT_1min"]}
SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    import django
    django.setup()
    from eco_core import config as eco_config
    from families.call import CallContext
    from mcp_gateway.calls import execute
    from mcp_gateway.registry import default_registry

    async def main():
        cfg = eco_config.load_config(warn=False)
        with eco_config.use_config(cfg):
            spec = default_registry().get("eco_stack_tables")
            call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28", token_source="config")
            result = await execute(spec, json.loads(sys.argv[1]), call, token=cfg.eco.api_token.reveal())
        print(json.dumps(result.structured_content))

    asyncio.run(main())
""")


def _run(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-c", SCRIPT, json.dumps(ARGS)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_stack_killed_mid_table_leaves_no_half_table_and_the_next_call_completes_it(sim, sim_data_dir, tmp_path):  # noqa: F811
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    env = {**sim_data_dir.env, "DJANGO_SETTINGS_MODULE": "eco_service.settings", "ECO_TOKEN": fresh_token(sim),
           "ECO_MCP_DOWNLOADS__DIRECTORY": str(downloads), "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"}
    first = _run(env)
    caught: list[Path] = []
    deadline = time.monotonic() + 240
    while first.poll() is None and time.monotonic() < deadline:
        caught = list(downloads.glob("datasets/*/.SAAT_1min.parquet.*.tmp"))
        if caught:
            os.kill(first.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    first.wait(30)
    assert caught, f"the stack ended before its table was written: {first.stderr.read()[-2000:]}"
    assert first.returncode == -signal.SIGKILL
    [folder] = list((downloads / "datasets").iterdir())
    assert not (folder / "SAAT_1min.parquet").exists()  # only the temporary name was being written
    for table in folder.glob("*.parquet"):  # whatever did land under a final name is whole
        pq.read_table(table)

    second = _run(env)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err[-3000:]
    body = json.loads(out)
    assert "error" not in body, body
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    tables = {t["name"]: t for t in body["tables"]}
    saat = pq.read_table(folder / "SAAT_1min.parquet")
    assert tables["SAAT_1min"]["rebuilt"] and saat.num_rows == tables["SAAT_1min"]["rows"]
    days = 28 + 31 + 30  # February to April 2023, a row a minute at each of CPER's positions
    positions = len({(h, v) for h, v in zip(saat.column("horizontalPosition").to_pylist(),
                                            saat.column("verticalPosition").to_pylist(), strict=True)})
    assert positions >= 2 and saat.num_rows == days * 1440 * positions
    assert json.loads((folder / "dataset.json").read_text())["tables"]["SAAT_1min"]["rows"] == saat.num_rows
    assert body["totals"]["downloaded"] == 0  # the first call's downloads were complete and verified
