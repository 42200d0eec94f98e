"""Benchmark of the release and citation tools against the simulator: per-case latency in process
(the gateway's `execute`, arguments to result) and over HTTP (the SDK client against uvicorn on a
loopback socket, stateless 2026-07-28 requests), the cold first call and p50/p99 of warm calls,
and the upstream requests of the cold call (in process and over HTTP) and the most any warm one
cost.

    .venv/bin/python bench/bench_releases.py [--calls 60]

Setup and measuring loops are bench/_harness.py's and bench/bench_prototypes_documents.py's
(imported, not copied): a throw-away SQLite data folder, no Redis (in-process cache), the
simulator in a thread of this process (limits scaled up), the catalogs (release catalog included)
built once through the real client as a running server has them, everything on 127.0.0.1. Each case runs once cold (a fresh
configuration: a new cache namespace), then `--calls` times warm; over HTTP likewise. Bounded:
9 cases x (1 + calls) x 2 transports.

Last figures (2-core VM shared with other engineers' test runs, load average ~3.3-5, Python 3.11,
SQLite, no Redis; 60 warm calls per case), milliseconds and upstream requests per call ("req cold"
in process, "http" the cold call over HTTP, "req warm" the most any warm in-process call cost):
  case                               cold ms inproc p50    p99 http cold    p50    p99 req cold http req warm
  list_releases                        197.8        0.4    0.6      77.6    6.0    7.4        0    0        0
  list_releases artifact urls           76.0        2.4    4.6      85.5   10.2   11.8        1    1        0
  get_release latest products           22.5        0.9    1.4      46.5    9.3   10.2        0    0        0
  get_release products limit=500        22.0        1.2    1.4      36.9   15.1   16.2        0    0        0
  get_release products+sites            28.9        8.5   10.3      42.1   20.4   38.5        1    1        1
  get_release product as published      36.5        3.7    4.2      54.7   12.4   14.2        1    1        0
  get_citation product (all)            22.7        0.4    0.7      36.5    5.2   17.2        0    0        0
  get_citation name+release bibtex      23.5        0.7    1.2      40.6   15.8   33.6        0    0        0
  get_citation prototype                31.3        0.6    0.8      98.1    9.8   26.0        1    1        0
  release-wide list requests (/releases/{tag}/products|sites): 0
Notes: the cold time includes building that configuration's upstream client (httpx pool, first
loopback connection); the first case's (~200 ms) most likely also pays the process's first
catalog-index read from the database (the later cold cases cost ~20-35 ms). Listing, a release's
products and a product's citation are answered from the catalogs: 0 requests, cold or warm.
Signed artifact URLs are one GET /releases, then cached (ttl_s.releases). The sites section is
one codes-only GraphQL query on every call, warm too: the upstream client never caches GraphQL.
A product as published is one GET /releases/{tag}/products/{code}, then cached; a prototype
citation one GET /prototype/datasets/{uuid}, then cached. No case called the release-wide product
or site lists (counted from the simulator's request log). Warm HTTP figures are mostly the
MCP/HTTP round trip, not the tools.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as harness  # found through the path insertion above
import bench_prototypes_documents as base  # found through the path insertion above

CODE = "DP1.00041.001"  # Soil temperature: in every simulated release


def cases(proto_uuid: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("list_releases", "eco_list_releases", {}),
        ("list_releases artifact urls", "eco_list_releases", {"include_artifact_urls": True}),
        ("get_release latest products", "eco_get_release", {"release": "latest"}),
        ("get_release products limit=500", "eco_get_release", {"release": "RELEASE-2024", "products_limit": 500}),
        ("get_release products+sites", "eco_get_release", {"release": "latest", "include": ["products", "sites"]}),
        ("get_release product as published", "eco_get_release", {"release": "latest", "product_code": CODE}),
        ("get_citation product (all)", "eco_get_citation", {"product": CODE}),
        ("get_citation name+release bibtex", "eco_get_citation",
         {"product": "Soil temperature", "release": "RELEASE-2022", "format": "bibtex"}),
        ("get_citation prototype", "eco_get_citation", {"prototype_uuid": proto_uuid}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=60)
    opts = parser.parse_args()
    sim = harness.start_simulator("eco-bench-protodocs-")
    from upstream_sim.biodata import RECORDED_PROTO_UUID

    table = cases(RECORDED_PROTO_UUID)
    try:
        asyncio.run(harness.build_catalog(harness.sim_config(sim)))
        sim.requests.clear()
        local = asyncio.run(base.in_process(sim, table, opts.calls))
        server, url = harness.serve(harness.sim_config(sim))
        try:
            remote = asyncio.run(base.over_http(sim, url, table, opts.calls))
        finally:
            server.should_exit = True
        wide = sim.requests.count(r"/releases/[^/]+/(sites|products)/?$")
    finally:
        sim.__exit__(None, None, None)
    base.print_cases(table, local, remote, width=34)
    print(f"release-wide list requests (/releases/{{tag}}/products|sites): {wide}")


if __name__ == "__main__":
    main()
