"""A serving process loads a heavy engine only when a call needs it.

The stacking engine (pyarrow, numpy), a SQL engine over datasets (duckdb), the chart renderer
(vl_convert, PIL), the PDF reader (pypdf) and the fuzzy matcher (rapidfuzz, for suggestions after
a mistake) cost a worker tens of MB of resident memory for good once imported; most workers never
stack, query, chart or misspell. A fresh
interpreter imports everything an HTTP worker imports before its first call (Django, the ASGI
app, every registered tool) and must find none of them loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pyarrow", "numpy", "duckdb", "pypdf", "rapidfuzz", "pandas", "vl_convert", "PIL")
PROBE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
import django
django.setup()
from eco_core.config import load_config
from mcp_gateway.http_app import build_app
from mcp_gateway.registry import default_registry
default_registry()
build_app(cfg=load_config(flags={"server.transport": "http", "cache.prewarm": False}, env={}, warn=False))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in %r)))
"""


def test_an_http_worker_ready_to_serve_has_loaded_no_heavy_engine(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECO_MCP_")}
    env.update({"ECO_MCP_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT), "DJANGO_SECRET_KEY": "x" * 50})
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    run = subprocess.run([sys.executable, "-c", PROBE % (HEAVY,)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []


# Before a stdio server's first answer: none of the engines, nor the upstream client (httpx, its
# transports, the reply models), which the first call that asks NEON loads, nor the call machinery
# (argument checks, the wire models) or a YAML parser no --config asked for. A desktop client
# waits for that answer, so every module on its way is start-up that the bare SDK does not pay.
BEFORE_FIRST_ANSWER = (*HEAVY, "httpx", "httpcore", "aiohttp", "upstream.client", "upstream.models", "mcp_gateway.calls",
                       "eco_core.wire", "yaml")
STDIO = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
from eco_service import cli
from eco_service.stdio_start import run_command

finish_setup = cli.finish_setup

def snapshot_then_finish_setup():
    # The set-up starts once the first answers are out: what is loaded now is what they took.
    with open(os.environ["ECO_TEST_LOADED"], "w") as out:
        json.dump(sorted(sys.modules), out)
    finish_setup()

cli.finish_setup = snapshot_then_finish_setup
sys.exit(run_command([]))
"""
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "heavy-engines", "version": "1"}}}}


def _loaded_by_first_answer(env: dict[str, str], snapshot: Path) -> tuple[list[str], list[str]]:
    """(tools listed, modules loaded when the set-up began) of one `eco_mcp_stdio` start."""
    proc = subprocess.Popen([sys.executable, "-c", STDIO], cwd=ROOT, env={**env, "ECO_TEST_LOADED": str(snapshot)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(json.dumps(TOOLS_LIST) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline() or "{}")
        _, err = proc.communicate(timeout=120)  # closes stdin: the set-up runs, then the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and snapshot.is_file(), err[-2000:]
    tools = [t["name"] for t in reply["result"]["tools"]]
    return tools, json.loads(snapshot.read_text())


def test_a_stdio_server_answers_its_tool_list_before_loading_an_engine_or_the_upstream_client(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECO_MCP_")}
    env.update({"ECO_MCP_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT), "DJANGO_SECRET_KEY": "x" * 50})
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    # The first start imports every tool module to list them (the families' reads hold the upstream
    # client) and keeps the listing: no engine even so. Every later start, a desktop client's
    # usual one, answers from the kept listing: neither an engine nor the upstream client.
    for start, unwanted in (("first", HEAVY), ("kept listing", BEFORE_FIRST_ANSWER)):
        tools, loaded = _loaded_by_first_answer(env, tmp_path / f"{start}.json")
        assert {"eco_stack_tables", "eco_query_tables", "eco_download_files"} <= set(tools), start
        early = [m for m in loaded if any(m == name or m.startswith(name + ".") for name in unwanted)]
        assert early == [], start
