"""Benchmark of eco_graphql: the guard-rail check (parse, operation and root-field rules, depth
through fragments, what the query asks for, local schema validation) in process for a small query,
for one at the alias and depth limits and for the 400-alias query that once stalled the server and issue 41's fragment bomb;
reading and cutting a large reply to the budget; p50/p99 over HTTP for a small query and the
hostile one's time to refusal (the SDK client against uvicorn on a loopback socket, the simulator
behind it); /healthz while waves of four fragment bombs are refused; and what four heavy calls at once (each a 5 MB reply cut to the budget) do to
/healthz and eco_ping timed from another task meanwhile, with the process's resident growth.

    .venv/bin/python bench/bench_graphql.py [--calls 200]

Setup: a throw-away SQLite data folder (the HTTP app migrates it), the simulator in a thread of
this process with its rate limits scaled up, the client's rate budget raised. No catalog is
needed: eco_graphql does not read it. Client, server and simulator share this process's cores;
the heavy calls' reply is sent by the simulator as it is (a status fault with that body), so the
simulator does no GraphQL work while the probe runs.

Last figures (2-core VM shared with other engineers' test runs, load average ~6, Python 3.11,
graphql-core 3.3.2, 200 calls; milliseconds):
  case                                                              p50       p99
  guard rails, small query (59 chars, depth 2)                      4.1      12.6
  guard rails, at the limits (1,719 chars, depth 8 through two
      fragments and an inline fragment, 30 aliased root fields)    37.2      52.5
  refusal of 400 aliases of products{...F} (7,542 chars)           41.7     386.3
  read and cut a 5,044,327-byte products reply to 50,000 bytes    169.8     221.3
  HTTP round trip, small query (1 upstream request each)           28.1      56.6
  HTTP round trip, the 400-alias query refused (no request)        45.6     443.2
  /healthz during 4 heavy calls at once (34 samples)                3.7      14.3
  eco_ping during 4 heavy calls at once (34 samples)               11.7      64.5
  the 4 heavy calls (5 MB replies each): 920 ms wall; resident growth 45 MB (each reply's bytes
  and text while read, the simulator's copies too; the read bound is 8 MB per reply)
Issue 41's fragment bomb (939 characters, 25 fragments each spreading the next twice: 2^24
aliased roots), same VM, load average ~6, 200 calls (milliseconds):
  refusal of the fragment bomb, in process                          1.2      10.9
  HTTP, fragment bomb refused, 4 at once (SDK client, no token)    62.2     102.2
  /healthz during 4 fragment bombs at once (23 samples)            16.3      44.9
Before the fragments were sized once each (root fields and aliases were collected by expanding
every spread), one such query held the event loop 48 s and a /healthz probe waited 48.4 s.
The refusal is graphql-core parsing the 7.5 KB document (the bounds are checked before its
validation, which compares hundreds of aliased fields pairwise); its p99, like the HTTP one, is a
full garbage collection of this process (the simulator's world included) landing in a run.
Before the bounds (same machine, same load): the 400-alias query was sent, took 49 s to answer
(the simulator executing 400 product lists, a 6.7 MB reply parsed whole and cut on the event
loop), and during four heavy calls /healthz waited 600-800 ms at worst. The read walks the
reply's outer levels in Python and hands each deeper value to json's C scanner, sizing items
dropped past the budget by one C encode each: about 1.5x json.loads of the same bytes, spent in
steps that pause for the event loop every millisecond.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as harness  # found through the path insertion above

SMALL = '{ site(siteCode: "HARV") { siteCode siteName domainCode } }'
HEAVY = "{ products { productCode productName productDescription keywords siteCodes { siteCode availableMonths } } }"


def at_the_limits(max_aliases: int = 30) -> str:
    """Aliased root fields, each reaching depth 8 through two fragments and an inline fragment,
    as many as the alias limit allows."""
    fragments = (
        "fragment A on Location { locationName locationChildHierarchy { ...B } }\n"
        "fragment B on LocationChildHierarchy { locationChildHierarchy { ... on LocationChildHierarchy {"
        " locationChildHierarchy { locationChildHierarchy { locationChildHierarchy { locationChildHierarchy {"
        " locationName } } } } } } }\n")
    parts = [f' h{i}: locationHierarchy(name: "SITE{i}") {{ ...A }}' for i in range(max_aliases)]
    return "{" + "".join(parts) + " }\n" + fragments


def hostile() -> str:
    sys.path.insert(0, str(harness.REPO))
    from tests.reliability.fuzzing import GRAPHQL_ALIASES

    return GRAPHQL_ALIASES


def fragment_bomb(levels: int = 24) -> str:
    """Issue 41's 939 characters: 25 fragments each spreading the next twice (2^24 aliased roots)."""
    parts = [f"fragment F{i} on Query {{...F{i + 1} ...F{i + 1}}}" for i in range(levels)]
    return " ".join(["{...F0}", *parts, f"fragment F{levels} on Query {{a:products{{productCode}}}}"])


async def bombs_with_probe(base: str, url: str, waves: int = 10) -> tuple[list[float], list[float]]:
    """Waves of four fragment bombs at once through the SDK client (no token) while another task
    times /healthz: each bomb's time to refusal, and the probe's latencies."""
    import httpx
    from mcp import Client

    bomb = fragment_bomb()
    refusals, health, done = [], [], asyncio.Event()
    async with httpx.AsyncClient(base_url=base) as web, Client(url, mode="2026-07-28") as client:
        await web.get("/healthz")

        async def probe() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                await web.get("/healthz")
                health.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.005)

        async def one() -> None:
            t0 = time.perf_counter()
            result = await client.call_tool("eco_graphql", {"query": bomb})
            refusals.append((time.perf_counter() - t0) * 1000)
            assert result.is_error and result.structured_content["error"]["code"] == "query_too_large"

        gc.collect()
        probing = asyncio.create_task(probe())
        for _ in range(waves):
            await asyncio.gather(*(one() for _ in range(4)))
        done.set()
        await probing
    return refusals, health


def timed(fn, runs: int, fresh=lambda: None) -> list[float]:
    """`fresh()` makes each run's input outside the timing."""
    out = []
    for _ in range(runs):
        arg = fresh()
        t0 = time.perf_counter()
        fn() if arg is None else fn(arg)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def over_http(url: str, calls: int, query: str, requests: int) -> list[float]:
    from mcp import Client

    times = []
    async with Client(url, mode="2026-07-28") as client:
        for i in range(calls + 1):
            t0 = time.perf_counter()
            result = await client.call_tool("eco_graphql", {"query": query})
            elapsed = (time.perf_counter() - t0) * 1000
            assert result.is_error == (requests == 0), result.structured_content
            assert result.meta["io.eco-mcp/upstream"]["requests"] == requests
            if i:
                times.append(elapsed)
    return times


def products_reply(products: int = 200, sites: int = 36, months: int = 65) -> str:
    """What HEAVY answers for NEON's catalog (~5 MB): every product at ~36 sites of ~65 months."""
    available = [f"{2013 + m // 12}-{m % 12 + 1:02d}" for m in range(months)]
    return json.dumps({"data": {"products": [
        {"productCode": f"DP1.{i:05d}.001", "productName": f"Product {i}", "productDescription": "d" * 250,
         "keywords": ["soil", "temperature"], "siteCodes": [{"siteCode": f"S{j:03d}", "availableMonths": available}
                                                            for j in range(sites)]}
        for i in range(products)]}})


def rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


async def heavy_calls(sim, base: str, url: str) -> tuple[float, list[float], list[float], int]:
    """Four HEAVY calls at once (plain POSTs) while another task times /healthz and eco_ping."""
    import threading

    import httpx
    from mcp import Client

    from tests.gateway import wire

    async with httpx.AsyncClient(base_url=base) as web, Client(url, mode="2026-07-28") as prober:
        await web.get("/healthz")
        await prober.call_tool("eco_ping", {})
        await prober.call_tool("eco_graphql", {"query": SMALL})
        sim.faults.add(kind="status", route=r"^/graphql", status=200, body=products_reply())
        health, pings, done = [], [], asyncio.Event()
        peak = {"start": rss(), "peak": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak["peak"] = max(peak["peak"], rss())
                time.sleep(0.005)

        async def probe() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                await web.get("/healthz")
                health.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                await prober.call_tool("eco_ping", {})
                pings.append((time.perf_counter() - t0) * 1000)
                await asyncio.sleep(0.005)

        async def heavy(rid: int) -> None:
            body, headers = wire.modern_request("tools/call", {"name": "eco_graphql", "arguments": {"query": HEAVY}},
                                                rid=rid)
            answer = wire.reply(await web.post("/mcp", json=body, headers=headers, timeout=60))["result"]
            assert not answer.get("isError") and answer["structuredContent"]["truncated"], answer

        gc.collect()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        probing = asyncio.create_task(probe())
        t0 = time.perf_counter()
        await asyncio.gather(*(heavy(i) for i in range(4)))
        wall = (time.perf_counter() - t0) * 1000
        done.set()
        await probing
        stop.set()
        sampler.join()
        sim.faults.clear()
    return wall, health, pings, max(0, peak["peak"] - peak["start"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    opts = parser.parse_args()
    sim = harness.start_simulator("eco-bench-graphql-")
    cfg = harness.sim_config(sim)
    from upstream.graphql_reply import read_reply
    from upstream.graphql_window import QueryBounds, check_query, window_schema

    window_schema()  # parsed once per process; not part of a call
    lim = cfg.limits
    bounds = QueryBounds(max_aliases=lim.graphql_max_aliases, max_nodes=lim.graphql_max_estimated_nodes,
                         list_estimate=lim.graphql_list_estimate)
    limit_query = at_the_limits(lim.graphql_max_aliases)
    checked = check_query(limit_query, operation_name=None, max_chars=lim.graphql_max_query_chars,
                          max_depth=lim.graphql_max_depth, bounds=bounds)
    assert checked.depth == lim.graphql_max_depth, checked.depth
    rows = []

    def check(q: str):
        return lambda: check_query(q, operation_name=None, max_chars=lim.graphql_max_query_chars,
                                   max_depth=lim.graphql_max_depth, bounds=bounds)

    def refused(q: str):
        def run() -> None:
            try:
                check(q)()
            except Exception as exc:  # the EcoError refusing it
                assert getattr(exc, "code", None) == "query_too_large", exc
            else:
                raise AssertionError("the hostile query was accepted")
        return run

    rows.append((f"guard rails, small query ({len(SMALL)} chars)", timed(check(SMALL), opts.calls)))
    roots = limit_query.count("locationHierarchy")
    rows.append((f"guard rails, at the limits ({len(limit_query)} chars, depth {checked.depth}, {roots} roots)",
                 timed(check(limit_query), opts.calls)))
    bad = hostile()
    rows.append((f"refusal of 400 aliases of products{{...F}} ({len(bad)} chars)", timed(refused(bad), opts.calls)))
    bomb = fragment_bomb()
    rows.append((f"refusal of the fragment bomb (25 fragments, 2^24 aliases, {len(bomb)} chars)",
                 timed(refused(bomb), opts.calls)))
    body = products_reply().encode()
    reply = read_reply(body, 50000)
    rows.append((f"read and cut a {reply.bytes_total}-byte products reply to 50000 bytes",
                 timed(lambda: read_reply(body, 50000), max(10, opts.calls // 10))))
    server, url = harness.serve(cfg)
    base = url.rsplit("/", 1)[0]
    try:
        rows.append(("HTTP round trip, small query", asyncio.run(over_http(url, opts.calls, SMALL, 1))))
        rows.append(("HTTP round trip, the 400-alias query refused", asyncio.run(over_http(url, opts.calls, bad, 0))))
        bomb_times, bomb_health = asyncio.run(bombs_with_probe(base, url))
        rows.append((f"HTTP, fragment bomb refused, 4 at once ({len(bomb_times)} calls)", bomb_times))
        rows.append((f"/healthz during 4 fragment bombs at once ({len(bomb_health)} samples)", bomb_health))
        wall, health, pings, grew = asyncio.run(heavy_calls(sim, base, url))
        rows.append((f"/healthz during 4 heavy calls ({len(health)} samples)", health))
        rows.append((f"eco_ping during 4 heavy calls ({len(pings)} samples)", pings))
    finally:
        server.should_exit = True
        sim.__exit__(None, None, None)
    for label, times in rows:
        print(f"{label:75s} p50 {statistics.median(times):8.2f} ms  p99 {harness.percentile(times, 0.99):8.2f} ms")
    print(f"4 heavy calls at once: {wall:.0f} ms wall; resident growth {grew / 1e6:.1f} MB "
          f"(read bound {lim.graphql_reply_read_factor * lim.graphql_hard_max_response_bytes / 1e6:.0f} MB per reply)")


if __name__ == "__main__":
    main()
