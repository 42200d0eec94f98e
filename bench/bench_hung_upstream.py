"""How long each call takes to answer while NEON hangs: every upstream request held, the catalogs
already built. Calls the catalog can answer should answer at once, calls with a catalog fallback
after `eco.fallback_wait_s`, and calls that need NEON end with a retryable upstream_unavailable at
`eco.call_deadline_s`, never later.

    .venv/bin/python bench/bench_hung_upstream.py [--fallback-wait 10] [--deadline 30]

Setup as bench_tools: SQLite, no Redis, the simulator in a thread, the gateway over HTTP through
the SDK client. After the catalogs are built every route of the simulator's API holds its request
for 10 minutes. `--fallback-wait` equal to `--deadline` is how the service behaved before the
setting existed.

Last figures (2-core VM, Python 3.11, default read timeouts), seconds to the answer:
  call                                   wait 10 / deadline 30    wait 30 / deadline 30 (as before)
  eco_search_products query               1.2 ok catalog            1.3 ok catalog (first search loads the index)
  eco_get_product (catalog record)        0.1 ok catalog            0.1 ok catalog
  eco_search_sites include_elevation     10.1 ok catalog           30.1 ok catalog
  eco_get_site HARV                      10.1 ok catalog           30.1 ok catalog
  eco_list_files                         30.0 upstream_unavailable 30.0 upstream_unavailable
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import build_catalog, serve, sim_config, start_simulator  # found through the path insertion above

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("eco_search_products query", "eco_search_products", {"query": "soil temperature"}),
    ("eco_get_product (catalog record)", "eco_get_product", {"product": "DP1.00041.001"}),
    ("eco_search_sites include_elevation", "eco_search_sites", {"query": "harv", "include_elevation": True}),
    ("eco_get_site HARV", "eco_get_site", {"site": "HARV"}),
    ("eco_list_files", "eco_list_files", {"product": "DP1.10033.001", "site_codes": ["HARV"], "start_month": "2023-07"}),
]


async def hung_calls(url: str) -> list[tuple[str, float, str, str]]:
    from mcp import Client

    rows = []
    async with Client(url, mode="2026-07-28") as client:
        for label, tool, args in CALLS:
            t0 = time.perf_counter()
            result = await client.call_tool(tool, args)
            seconds = time.perf_counter() - t0
            body = result.structured_content or {}
            if result.is_error:
                rows.append((label, seconds, body.get("error", {}).get("code", "?"), ""))
            else:
                rows.append((label, seconds, "ok", (body.get("source") or {}).get("origin", "")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fallback-wait", type=float, default=10.0)
    parser.add_argument("--deadline", type=float, default=30.0)
    opts = parser.parse_args()
    from eco_core.config import set_config

    sim = start_simulator("eco-bench-hung-")
    token = sim.issue_token()

    def configured() -> Any:
        # A new configuration each time: a new cache namespace, so the build's cached replies
        # (GET /locations/sites among them) do not answer the hung calls.
        cfg = sim_config(sim, token=token)
        cfg = cfg.model_copy(update={"eco": cfg.eco.model_copy(update={
            "fallback_wait_s": opts.fallback_wait, "call_deadline_s": opts.deadline})})
        set_config(cfg)
        return cfg

    asyncio.run(build_catalog(configured()))
    server, url = serve(configured())
    sim.faults.add("hang", route=r"^/api/v0/", hold_s=600)
    try:
        rows = asyncio.run(hung_calls(url))
    finally:
        sim.reset()
        server.should_exit = True
        sim.__exit__(None, None, None)
    print(f"NEON hung; eco.fallback_wait_s {opts.fallback_wait:g}, eco.call_deadline_s {opts.deadline:g}")
    print(f"  {'call':38} {'seconds':>8}  answer")
    for label, seconds, outcome, origin in rows:
        print(f"  {label:38} {seconds:8.1f}  {outcome} {origin}".rstrip())


if __name__ == "__main__":
    main()
