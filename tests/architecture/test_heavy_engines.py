"""A serving process loads a heavy engine only when a call needs it.

The stacking engine (pyarrow, numpy), a SQL engine over datasets (duckdb), the chart renderer
(vl_convert, PIL), the PDF reader (pypdf)
and the fuzzy matcher (rapidfuzz, for suggestions after a mistake) cost a worker tens of MB of
resident memory for good once imported; most workers never stack, query or misspell. A fresh
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
