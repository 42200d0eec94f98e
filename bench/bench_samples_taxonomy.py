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
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as harness  # found through the path insertion above

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


async def _once(cfg, spec, args, token):
    import mcp_types as types

    from families.call import CallContext
    from mcp_gateway.calls import execute

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
        cfg = harness.sim_config(sim, token)  # a new configuration: a new cache namespace, so the first call is cold
        spec = default_registry().get(tool)
        out[label] = await harness.cold_then_warm(lambda cfg=cfg, spec=spec, args=args: _once(cfg, spec, args, token),
                                                  calls)
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
            out[label] = await harness.timed_http_calls(client, tool, lambda i, args=args: args, calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=60)
    opts = parser.parse_args()
    sim = harness.start_simulator("eco-bench-samples-")
    token = sim.issue_token(exp_s=86400)
    local = asyncio.run(in_process(sim, token, opts.calls))
    server, url = harness.serve(harness.sim_config(sim, token))
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
        print(f"{label:38s}{cold_ms:8.1f}{statistics.median(times):11.1f}{harness.percentile(times, 0.99):7.1f}"
              f"{statistics.median(http):10.1f}{harness.percentile(http, 0.99):7.1f}{cold_req:9d}{warm_req:9d}")


if __name__ == "__main__":
    main()
