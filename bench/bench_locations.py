"""Benchmark of the location tools on the full simulated tree (81 sites, 20 domains): latency in
process (the gateway's `execute`) and over HTTP (the SDK client against uvicorn on loopback),
p50 and p99, and the upstream requests per call (first call, then the most any later call cost).

    .venv/bin/python bench/bench_locations.py [--calls 30]

Setup as bench/bench_tools.py (throw-away SQLite, simulator in a thread, catalogs built once
through the real client, rate budget raised). Every case runs twice: first with no stored subtrees
(the fallback: a site walk is one hierarchy=true request), then after the subtree refresh
(catalog.services.location_subtrees, timed) with a new configuration (a cold answer cache).
"site walk cold" walks a different site on every call (an answer-cache miss before the refresh, a
site not yet read into memory after it); "site walk warm" repeats HARV.

Last figures (2-core VM shared with other engineers' test runs, load average ~6, Python 3.11,
SQLite, no Redis; 30 timed calls per case after one untimed first call), milliseconds and
upstream requests per call:
  subtrees not stored (fallback: hierarchy=true per site)
  case                             inproc p50    p99   http p50    p99  req first  req max
  REALM->SITE list                        6.1    9.6       31.2  159.8          0        0
  site walk cold                         22.5  448.1       38.2   72.4          2        2
  site walk warm (towers)                 8.1   11.7       10.5   22.5          0        0
  proximity TOWER 100 km                  6.9   17.2       10.1   30.3          0        0
  get_location include=all                5.6   12.9       20.6  111.0          2        0
  subtree refresh: 3439 nodes of 81 sites, 85 requests, 4.0 s
  subtrees stored
  case                             inproc p50    p99   http p50    p99  req first  req max
  REALM->SITE list                        4.5   13.5       18.0   82.5          0        0
  site walk cold                          6.3   12.6       16.7   70.1          0        0
  site walk warm (towers)                 3.7    8.7        8.1   12.5          0        0
  proximity TOWER 100 km                  4.0   16.0        8.1   14.0          0        0
  get_location include=all                6.4   27.0       17.8   53.2          1        0
Notes: before the refresh a cold walk is two requests: the site's hierarchy=true GET and one
GraphQL lookup for the page's 50 coordinates (include_coordinates is on by default; off, it is
one). The proximity case shows 0 because the cold-walk case had already walked and placed those
sites' towers; on its own its first call costs one walk per site within radius_km + 25 km plus
one GraphQL lookup. include=all is the history=true GET (the plain record and its history) plus
the hierarchy=true GET; both are cached. With the subtrees stored every walk, its coordinates and
the proximity search cost nothing upstream (a cold site is one indexed query, then kept in
memory per subtrees version); include=all is the history=true GET alone (history is not stored).
The refresh is 81 hierarchy=true GETs plus ceil(3439 / 1000) = 4 GraphQL record batches. The HTTP
p99 figures are dominated by the machine's load (other runs).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as harness  # found through the path insertion above

Args = Callable[[int], dict[str, Any]]
SITES: list[str] = []


def _cold(i: int) -> dict[str, Any]:
    return {"root": SITES[i % len(SITES)]}


CASES: list[tuple[str, str, Args]] = [
    ("REALM->SITE list", "eco_find_locations", lambda i: {"root": "REALM", "location_type": "SITE", "limit": 100}),
    ("site walk cold", "eco_find_locations", _cold),
    ("site walk warm (towers)", "eco_find_locations", lambda i: {"root": "HARV", "location_type": "TOWER"}),
    ("proximity TOWER 100 km", "eco_find_locations",
     lambda i: {"location_type": "TOWER", "latitude": 42.5, "longitude": -72.2, "radius_km": 100}),
    ("get_location include=all", "eco_get_location", lambda i: {"name": "TOWER100450", "include": ["all"]}),
]


async def in_process(cfg: Any, calls: int) -> dict[str, tuple[list[float], int, int]]:
    from mcp.types import CallToolResult

    from families.call import CallContext
    from mcp_gateway.calls import execute
    from mcp_gateway.registry import default_registry
    from upstream.client import close_clients

    out = {}
    for label, tool, args in CASES:
        spec = default_registry().get(tool)
        assert spec is not None, tool
        costs, times = [], []
        for i in range(calls + 1):
            call = CallContext(cfg=cfg, transport="http", protocol_version="2026-07-28")
            t0 = time.perf_counter()
            result = await execute(spec, args(i), call, token=None)
            elapsed = time.perf_counter() - t0
            assert isinstance(result, CallToolResult) and not result.is_error, result
            costs.append((result.meta or {})["io.eco-mcp/upstream"]["requests"])
            if i:  # the first call also builds the catalog index: counted, not timed
                times.append(elapsed * 1000)
        out[label] = (times, costs[0], max(costs[1:]))
    await close_clients()
    return out


async def over_http(url: str, calls: int) -> dict[str, list[float]]:
    from mcp import Client

    out = {}
    async with Client(url, mode="2026-07-28") as client:
        for label, tool, args in CASES:
            def later(i: int, args: Args = args) -> dict[str, Any]:
                return args(i + calls + 1)  # the cold walk goes on with sites the in-process run did not touch

            out[label] = await harness.timed_http_calls(client, tool, later, calls)
    return out


def _both(cfg: Any, calls: int) -> tuple[dict[str, tuple[list[float], int, int]], dict[str, list[float]]]:
    """The cases in process, then over HTTP (a server of their own on `cfg`)."""
    local = asyncio.run(in_process(cfg, calls))
    server, url = harness.serve(cfg)
    try:
        remote = asyncio.run(over_http(url, calls))
    finally:
        server.should_exit = True
    return local, remote


async def store_subtrees() -> Any:
    """The subtree refresh a running deployment's beat runs, through the real upstream client."""
    from catalog.services.location_subtrees import refresh_location_subtrees
    from upstream.client import close_clients, get_client

    outcome = await refresh_location_subtrees(client=get_client(), trigger="bench")
    assert outcome.ok, outcome.error
    await close_clients()
    return outcome


def _table(title: str, local: dict[str, tuple[list[float], int, int]], remote: dict[str, list[float]]) -> None:
    print(title)
    print(f"{'case':32s}{'inproc p50':>11s}{'p99':>7s}{'http p50':>11s}{'p99':>7s}{'req first':>11s}{'req max':>9s}")
    for label, _, _ in CASES:
        times, first, most = local[label]
        http = remote[label]
        print(f"{label:32s}{statistics.median(times):11.1f}{harness.percentile(times, 0.99):7.1f}"
              f"{statistics.median(http):11.1f}{harness.percentile(http, 0.99):7.1f}{first:11d}{most:9d}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=30)
    opts = parser.parse_args()
    sim = harness.start_simulator("eco-bench-tools-")
    try:
        cfg = harness.sim_config(sim)
        asyncio.run(harness.build_catalog(cfg))
        SITES.extend(sorted(sim.world.sites))  # type: ignore[attr-defined]
        before = _both(cfg, opts.calls)
        t0 = time.perf_counter()
        outcome = asyncio.run(store_subtrees())
        refresh_s = time.perf_counter() - t0
        # A new configuration: a new answer-cache namespace, so nothing cached above is reused.
        after = _both(harness.sim_config(sim), opts.calls)
    finally:
        sim.__exit__(None, None, None)  # type: ignore[attr-defined]
    _table("subtrees not stored (fallback: hierarchy=true per site)", *before)
    print(f"subtree refresh: {outcome.rows} nodes of {len(SITES)} sites, {outcome.requests} requests, "
          f"{refresh_s:.1f} s")
    _table("subtrees stored", *after)


if __name__ == "__main__":
    main()
