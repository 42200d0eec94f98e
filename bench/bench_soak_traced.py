"""Does a worker's memory grow over many calls? Python's own allocations, traced, not only RSS.

    .venv/bin/python bench/bench_soak_traced.py [--warm 20000] [--calls 100000]

bench_vs_sdk's soak reads the resident set of a real HTTP worker, which also moves with the
allocator's arenas; this reads what Python itself still holds. In one process: the simulator and
its catalogs as bench_instructions sets them up, the real ASGI app (mcp_gateway.http_app), and
bench_vs_sdk's mixed catalog cases (ping, searches, product, availability) handed to it as
tools/call requests, `--warm` calls first (the bounded kept stores fill), then tracemalloc on and
`--calls` more. Printed: RSS and traced memory along the way, the net growth of traced blocks
over the measured calls and the lines holding most of it. Every reply must be a successful
result.

Figures (issue 19's third session, tree 764f382, 20,000 warm-up calls then 100,000; two runs):
    this script:   RSS 136.9 -> 137.5 (25,000 calls) -> 137.5 (50,000) -> 137.5 (75,000) ->
                   137.5 MB; traced blocks +7 KiB net over the 100,000 calls, none of it growing
                   per call (the largest: 15 new prometheus label values, 1 KiB of weak sets)
    its first draft (the same soak, the last reply still referenced at the snapshot): RSS
                   136.9 -> 137.7 MB, traced +38 KiB net, 31 KiB of it that reply's body.
Python holds nothing more per call; what bench_vs_sdk's RSS soak shows beyond this (~1 MB over
its first 100,000 calls, 0.4 MB over the next) is the warm-up this script does before measuring,
the bounded kept stores filling, and the allocator's arenas.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_instructions as bi  # noqa: E402
from bench_mixed_load import _env, _free_port, simulator_with_catalogs  # noqa: E402


def _rss_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


async def _soak(warm: int, calls: int, sim: Any) -> None:
    app, _ = bi._app("eco_ping")
    mixed = [c for case in bi.CASES for c in bi.CASES[case]]
    started: list[Any] = []
    lifespan: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await lifespan.put({"type": "lifespan.startup"})

    async def lsend(message: dict[str, Any]) -> None:
        started.append(message)

    asyncio.get_running_loop().create_task(app({"type": "lifespan"}, lifespan.get, lsend))
    while not started:
        await asyncio.sleep(0.01)

    async def call(n: int) -> None:
        reply = await bi._call(app, *mixed[n % len(mixed)], n + 1)
        if b'"isError":false' not in reply:
            raise RuntimeError(f"not a successful result: {reply[:300]!r}")

    for n in range(warm):
        await call(n)
    gc.collect()
    tracemalloc.start(1)
    before, rss_before = tracemalloc.take_snapshot(), _rss_mb()
    for n in range(calls):
        await call(n)
        if n and n % 25_000 == 0:
            print(f"{n:,} calls: RSS {_rss_mb():.1f} MB, traced {tracemalloc.get_traced_memory()[0] // 1024} KiB",
                  flush=True)
    gc.collect()
    stats = tracemalloc.take_snapshot().compare_to(before, "lineno")
    print(f"{calls:,} calls after {warm:,}: RSS {rss_before:.1f} -> {_rss_mb():.1f} MB; traced blocks "
          f"{sum(s.size_diff for s in stats) / 1024:+.0f} KiB net")
    for s in stats[:5]:
        print(f"  {s.size_diff / 1024:+.0f} KiB, {s.count_diff:+d} blocks: {s.traceback.format()[0].strip()}")
    sys.stdout.flush()
    sim.terminate()
    sim.wait(timeout=20)
    os._exit(0)  # the SDK's session manager is not unwound (as in bench_instructions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--warm", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=100_000)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eco-bench-soak-") as data_dir:
        port = _free_port()
        env = _env(data_dir, port)
        env.update({"ECO_MCP_SERVER__TRANSPORT": "http", "ECO_MCP_CACHE__PREWARM": "false"})
        sim = simulator_with_catalogs(env, port)
        os.environ.update(env)
        try:
            asyncio.run(_soak(opts.warm, opts.calls, sim))
        finally:  # reached only when the soak failed
            sim.terminate()
            sim.wait(timeout=20)


if __name__ == "__main__":
    main()
