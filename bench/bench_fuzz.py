"""Schema fuzzing at length: the cases of tests/reliability (every listed tool, arguments drawn
from its published inputSchema: valid, camelCase, hostile, wrong types, out of range, unknown keys,
missing required), sent through the SDK's MCP client to the real service over HTTP
(`manage.py eco_mcp --transport http`) and over stdio (`manage.py eco_mcp_stdio`, downloads into a
throw-away folder), with the simulator behind both and a catalog built from it. Every answer is
judged by tests/reliability/oracle.py; the counts by tool and by outcome (success or error code),
seconds and calls/s are printed, and every failure after them.

    .venv/bin/python bench/bench_fuzz.py [--calls 10000] [--http-share 0.5] [--seed N]
                                         [--concurrency 4] [--redis-url redis://127.0.0.1:6379/14]

The seed defaults to today's date (as the CI sample's rotating seed); `--seed` replays a run.
The simulator's rate limits are scaled up 100 times, so the calls measure the service, not waits.

Last figures: 10,000 calls, seed 20261123 (two rounds: 20261123 and 20261124), 4 in flight, 45 s
hang bound; 2-core container shared with other engineers' test runs (load average ~2.5-4);
SQLite catalog built from the simulator in 7.7 s, in-process caches:

    HTTP   5,000 calls in 53.7 s =  93 calls/s, 19 tools, 0 failures
           success 2,225  invalid_argument 2,282  not_found 474  ambiguous_input 11  query_too_large 8
    stdio  5,000 calls in 31.7 s = 158 calls/s, 20 tools, 0 failures
           success 2,063  invalid_argument 2,412  not_found 478  query_too_large 18  ambiguous_input 17
           download_limit_exceeded 12
    0 internal_error, 0 JSON-RPC errors, 0 HTTP 5xx, 0 hangs

    mean latency per tool, HTTP / stdio (262-264 / 250 calls each):
    eco_download_files            -   / 21 ms   (success 34, download_limit_exceeded 12)
    eco_find_locations          54 ms / 27 ms   eco_get_availability      27 ms / 25 ms
    eco_get_citation            32 ms / 16 ms   eco_get_document          27 ms / 19 ms
    eco_get_location            51 ms / 30 ms   eco_get_product           33 ms / 21 ms
    eco_get_prototype_dataset   33 ms / 23 ms   eco_get_release           41 ms / 34 ms
    eco_get_sample              29 ms / 19 ms   eco_get_site              61 ms / 40 ms
    eco_graphql                 35 ms / 24 ms   eco_list_files           105 ms / 35 ms
    eco_list_releases           45 ms / 28 ms   eco_list_sample_classes   30 ms / 23 ms
    eco_ping                    55 ms / 22 ms   eco_search_products       34 ms / 22 ms
    eco_search_prototype_datasets 30 ms / 23 ms eco_search_sites          38 ms / 21 ms
    eco_search_taxonomy         56 ms / 32 ms

    The same seed at load average ~6 (an earlier run, before the vocabulary gained a GraphQL
    query of two operations): HTTP 118.1 s (42 calls/s), stdio 62.5 s (80 calls/s). At 8 in flight on stdio (seed 404, 1,500 calls) a few calls
    wait longer than connect_timeout_s for one of the 4 upstream slots and answer
    upstream_unavailable, as the configuration says they should.

A seed gives the same cases every time: two runs of one seed with the same code gave identical counts.
About 3 cases in 10 are made schema-invalid (wrong type, out of range, unknown key, missing
required), hostile strings aside; the other invalid_argument answers are schema-valid calls a
recorded spec rule refuses (tests/reliability/spec_rules.py: blank names, exclusive inputs...).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _build(sim: object, folder: Path) -> dict[str, str]:
    import subprocess

    from tests.reliability.conftest import _BUILD, PYTHON, base_env, fresh_token

    env = base_env(sim, folder)
    build_env = {**env, "DJANGO_SETTINGS_MODULE": "eco_service.settings", "ECO_TOKEN": fresh_token(sim),
                 "ECO_MCP_ECO__TOKEN_FOR_PUBLIC_ENDPOINTS": "true"}
    subprocess.run([PYTHON, "-c", _BUILD], cwd=REPO, env=build_env, check=True, capture_output=True, timeout=600)
    # The client's own budget raised with the simulator's: the run measures calls, not waiting.
    env.update({"ECO_MCP_ECO__RATE_LIMIT__TOKEN_BURST": "100000", "ECO_MCP_ECO__RATE_LIMIT__TOKEN_RPS": "10000",
                "ECO_MCP_ECO__TOKEN_FOR_PUBLIC_ENDPOINTS": "true"})
    return env


def _plan(seed: int, calls: int) -> list[tuple[int, int]]:
    # Two rounds: the second also mutates the calls the first round's answers proposed in nextSteps.
    return [(seed, calls // 2), (seed + 1, calls - calls // 2)]


async def _http(env: dict[str, str], folder: Path, calls: int, seed: int, concurrency: int, vocab: dict):
    from mcp import Client

    from tests.reliability.conftest import serve_http
    from tests.reliability.oracle import fuzz_client

    env = {**env, "ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP": "true"}
    with serve_http(env, folder / "http.log") as service:
        async with Client(service.url, mode="2026-07-28") as client:
            return await fuzz_client(client, _plan(seed, calls), vocab, concurrency=concurrency,
                                     log_of=service.log.traceback_of)


async def _stdio(env: dict[str, str], folder: Path, calls: int, seed: int, concurrency: int, vocab: dict):
    from mcp import Client
    from mcp.client.stdio import stdio_client

    from tests.reliability.conftest import ServerLog, stdio_params
    from tests.reliability.oracle import fuzz_client

    downloads = folder / "downloads"
    downloads.mkdir()
    env = {**env, "ECO_MCP_DOWNLOADS__DIRECTORY": str(downloads), "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost",
           "ECO_MCP_DOWNLOADS__MAX_FILES_PER_CALL": "5", "ECO_MCP_DOWNLOADS__MAX_BYTES_PER_CALL": str(20 * 2**20)}
    log = folder / "stdio.log"
    with log.open("w") as errlog:
        async with Client(stdio_client(stdio_params(env), errlog=errlog), mode="2026-07-28") as client:
            return await fuzz_client(client, _plan(seed, calls), vocab, concurrency=concurrency,
                                     log_of=ServerLog(log).traceback_of)


def _print(label: str, tally, listed: set[str]) -> None:
    print(f"\n== {label}: {tally.calls} calls in {tally.seconds:.1f} s = {tally.calls / tally.seconds:.0f} calls/s; "
          f"{len(listed)} tools; {len(tally.failures)} failures")
    print("  by outcome: " + ", ".join(f"{k} {v}" for k, v in tally.by_outcome.most_common()))
    for tool, n in sorted(tally.by_tool.items()):
        mean = 1000 * tally.seconds_by_tool[tool] / n
        codes = sorted(((o, c) for (t, o), c in tally.by_tool_outcome.items() if t == tool), key=lambda x: -x[1])
        print(f"  {tool:<30} {n:>5} calls  mean {mean:5.0f} ms  " + " ".join(f"{o} {c}" for o, c in codes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--http-share", type=float, default=0.5, help="fraction of the calls sent over HTTP")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--redis-url", default=None, help="give the HTTP server a Redis cache")
    args = parser.parse_args()

    import datetime

    from tests.reliability.sim_vocabulary import vocabulary
    from upstream_sim.server import SimServer

    seed = args.seed if args.seed is not None else int(datetime.date.today().strftime("%Y%m%d"))
    http_calls = round(args.calls * args.http_share)
    folder = Path(tempfile.mkdtemp(prefix="bench-fuzz-"))
    print(f"seed {seed}; {http_calls} calls over HTTP, {args.calls - http_calls} over stdio; files in {folder}")
    with SimServer(seed=1, port=0, rate_limit_scale=100.0) as sim:
        t0 = time.perf_counter()
        env = _build(sim, folder / "data")
        print(f"catalog built from the simulator in {time.perf_counter() - t0:.1f} s")
        from tests.reliability.conftest import fresh_token

        vocab = vocabulary(sim)
        runs = []
        if http_calls:
            http_env = {**env, "ECO_TOKEN": fresh_token(sim), **({"REDIS_URL": args.redis_url} if args.redis_url else {})}
            runs.append(("HTTP", *asyncio.run(_http(http_env, folder, http_calls, seed, args.concurrency, vocab))))
        if args.calls - http_calls:
            runs.append(("stdio", *asyncio.run(_stdio({**env, "ECO_TOKEN": fresh_token(sim)}, folder,
                                                      args.calls - http_calls, seed, args.concurrency, vocab))))
    for label, tally, listed in runs:
        _print(label, tally, listed)
    for label, tally, _ in runs:
        if tally.failures:
            print(f"\n== {label} failures\n{tally.report(most=200)}")
    failures = sum(len(t.failures) for _, t, _ in runs)
    print(f"\n{failures} failures in {args.calls} calls")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
