"""Benchmark of the samples and taxonomy tools against the simulator: per-tool latency in process
(the gateway's `execute`, arguments to result) and over HTTP (the SDK client against uvicorn on a
loopback socket, stateless 2026-07-28 requests), p50 and p99 of warm calls, the cold first call's
time, and the upstream requests of the cold call and of a warm one.

    .venv/bin/python bench/bench_samples_taxonomy.py [--calls 60]

Setup: a throw-away SQLite data folder, no Redis (in-process cache), the simulator in a thread
of this process (limits scaled up), a simulator token lent to HTTP callers
(server.share_config_token_over_http). "ambiguous tag round trip" is eco_get_sample on the tag
shared by two classes with an elicitation client: over HTTP that is two requests (the question,
then the retry with requestState); in process, the question and the retry are timed together.
Every case is called once cold (a fresh configuration, so a fresh cache namespace), then
`--calls` times warm.

Last figures (2-core VM shared with other engineers' test runs, Python 3.11, SQLite, no Redis;
60 warm calls per case), milliseconds and upstream requests per call:
  case                                   cold ms inproc p50    p99  http p50    p99 req cold req warm
  list_sample_classes all                  387.6        0.3   10.1      22.0   51.1        1        0
  list_sample_classes tag                  178.6        0.2    0.4       8.1   14.0        1        0
  get_sample barcode                       116.7        0.3    0.8      37.7   74.7        1        0
  get_sample tag+class degree=2            104.7        0.3    0.6      28.8   52.0        1        0
  get_sample ambiguous tag round trip      162.7       23.1   43.4      78.7  159.8        3        1
  search_taxonomy TICK                     131.6        5.6   13.1      35.7   60.8        1        0
  search_taxonomy BIRD verbose             304.5       27.0   52.0      65.4  129.3        1        0
  search_taxonomy genus fallback           395.7        3.9   13.6      48.8   71.7        2        0
Notes: the cold time includes building that configuration's upstream client (httpx pool, first
connection). get_sample views are cached 60 s per token hash, so warm calls ask nothing; the round
trip's retry re-validates the chosen class with a fresh /samples/classes request on every call
(1 warm request by design). verbose taxonomy pays the byte-budget trimming of ~100 wide rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TAG = "SHARED.TAG.2019"
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("list_sample_classes all", "eco_list_sample_classes", {}),
    ("list_sample_classes tag", "eco_list_sample_classes", {"sample_tag": TAG}),
    ("get_sample barcode", "eco_get_sample", {"barcode": "A00000123456"}),
    ("get_sample tag+class degree=2", "eco_get_sample",
     {"sample_tag": TAG, "sample_class": "cfc_fieldData_in.sampleID", "degree": 2}),
    ("get_sample ambiguous tag round trip", "eco_get_sample", {"sample_tag": TAG}),
    ("search_taxonomy TICK", "eco_search_taxonomy", {"taxon_type_code": "TICK"}),
    ("search_taxonomy BIRD verbose", "eco_search_taxonomy", {"taxon_type_code": "BIRD", "verbose": True,
                                                             "limit": 100}),
    ("search_taxonomy genus fallback", "eco_search_taxonomy", {"scientific_name": "Quercus a"}),
]
CHOSEN = "cfc_fieldData_in.sampleID"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def setup():
    os.environ["ECO_MCP_DATA_DIR"] = tempfile.mkdtemp(prefix="eco-bench-samples-")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from upstream_sim.server import SimServer

    sim = SimServer(seed=1, port=0, rate_limit_scale=100.0)
    sim.__enter__()
    return sim


def make_cfg(sim, token: str):
    from eco_core.config import load_config, set_config

    flags = {"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
             "eco.rate_limit.anonymous_burst": 100000, "eco.rate_limit.anonymous_rps": 10000,
             "eco.rate_limit.token_burst": 100000, "eco.rate_limit.token_rps": 10000,
             "server.transport": "http", "cache.prewarm": False, "server.share_config_token_over_http": True}
    cfg = load_config(flags=flags, env={"ECO_TOKEN": token}, warn=False)
    set_config(cfg)
    return cfg


async def _once(cfg, spec, args, token):
    import mcp_types as types

    from mcp_gateway.calls import execute
    from mcp_gateway.context import CallContext

    def ctx(**kw):
        return CallContext(cfg=cfg, transport="http", protocol_version="2026-07-28", token_source="config",
                           client_elicitation=True, **kw)

    result = await execute(spec, args, ctx(), token=token)
    requests = result.meta["io.eco-mcp/upstream"]["requests"]
    if isinstance(result, types.InputRequiredResult):
        answer = {"sample_class": {"action": "accept", "content": {"sample_class": CHOSEN}}}
        result = await execute(spec, args, ctx(request_state=result.request_state, input_responses=answer),
                               token=token)
        requests += result.meta["io.eco-mcp/upstream"]["requests"]
    assert not result.is_error, result.structured_content
    return requests


async def in_process(sim, token: str, calls: int):
    from mcp_gateway.registry import default_registry
    from upstream.client import close_clients

    out = {}
    for label, tool, args in CASES:
        cfg = make_cfg(sim, token)  # a new configuration: a new cache namespace, so the first call is cold
        spec = default_registry().get(tool)
        t0 = time.perf_counter()
        cold_req = await _once(cfg, spec, args, token)
        cold_ms = (time.perf_counter() - t0) * 1000
        times, warm_req = [], 0
        for _ in range(calls):
            t0 = time.perf_counter()
            warm_req = max(warm_req, await _once(cfg, spec, args, token))
            times.append((time.perf_counter() - t0) * 1000)
        out[label] = (cold_ms, times, cold_req, warm_req)
        await close_clients()
    return out


async def over_http(url: str, calls: int):
    import mcp_types as types
    from mcp import Client

    async def answer(context, params):
        return types.ElicitResult(action="accept", content={"sample_class": CHOSEN})

    out = {}
    async with Client(url, mode="2026-07-28", elicitation_callback=answer) as client:
        for label, tool, args in CASES:
            times = []
            for _ in range(calls):
                t0 = time.perf_counter()
                result = await client.call_tool(tool, args)
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.structured_content
            out[label] = times
    return out


def serve(cfg):
    import uvicorn

    from mcp_gateway.http_app import build_app

    server = uvicorn.Server(uvicorn.Config(build_app(cfg=cfg), host="127.0.0.1", port=0, lifespan="on",
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/mcp"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=60)
    opts = parser.parse_args()
    sim = setup()
    token = sim.issue_token(exp_s=86400)
    local = asyncio.run(in_process(sim, token, opts.calls))
    server, url = serve(make_cfg(sim, token))
    try:
        remote = asyncio.run(over_http(url, opts.calls))
    finally:
        server.should_exit = True
        sim.__exit__(None, None, None)
    print(f"{'case':38s}{'cold ms':>8s}{'inproc p50':>11s}{'p99':>7s}{'http p50':>10s}{'p99':>7s}"
          f"{'req cold':>9s}{'req warm':>9s}")
    for label, _, _ in CASES:
        cold_ms, times, cold_req, warm_req = local[label]
        http = remote[label]
        print(f"{label:38s}{cold_ms:8.1f}{statistics.median(times):11.1f}{_pct(times, 0.99):7.1f}"
              f"{statistics.median(http):10.1f}{_pct(http, 0.99):7.1f}{cold_req:9d}{warm_req:9d}")


if __name__ == "__main__":
    main()
