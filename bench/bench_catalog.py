"""Catalog benchmarks against the NEON simulator (full simulated catalog: 197 products, 81 sites).

    .venv/bin/python bench/bench_catalog.py

Measures (1) a full refresh through the real upstream client, from GraphQL and from REST, with its
upstream request count; (2) product search latency over 1,000 varied queries in-process (words,
multiword, typos, codes, filters, no-match); (3) the time from a fresh process start to its
first answered search with a warm database.

Last figures (2 shared CPU cores, load ~2.3, SQLite, simulator on loopback, 2026-11-22 13:38 UTC):
    refresh from GraphQL   6.19 s, 4 upstream requests (1 GraphQL products+sites, /releases,
                           /locations/sites, /locations/REALM); rows 197 products, 81 sites,
                           6 releases, 101 locations (81 sites + 20 domains), 7053 availability cells
    refresh from REST      6.40 s, 5 upstream requests (/products, /sites, then the same three)
                           (most of either is the simulator generating its answers)
    index build            531 ms
    product search         1,000 varied queries: p50 0.293 ms, p99 1.056 ms, max 6.9 ms
    first search after a fresh process start with a warm database: 1212 ms in process
                           (django.setup + imports + index build + search), 1788 ms wall with
                           interpreter start; no upstream request
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA_DIR = tempfile.mkdtemp(prefix="eco-bench-")
os.environ["ECO_MCP_DATA_DIR"] = DATA_DIR
os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)
os.environ.pop("CELERY_BROKER_URL", None)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")

import django  # noqa: E402

django.setup()

from asgiref.sync import async_to_sync  # noqa: E402
from django.core.management import call_command  # noqa: E402

from catalog import index  # noqa: E402
from eco_core import config as eco_config  # noqa: E402
from families.products import SearchProductsInput, find_products  # noqa: E402


def queries(idx: index.CatalogIndex, n: int = 1000, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    vocab = [w for w in idx.vocab if len(w) >= 4 and not w.isdigit()]
    names = [p.name for p in idx.products]
    themes = sorted({t for p in idx.products for t in p.themes})
    sites = [s.code for s in idx.sites]
    out: list[dict] = []
    while len(out) < n:
        kind = rng.randrange(8)
        if kind == 0:
            out.append({"query": rng.choice(vocab)})
        elif kind == 1:
            out.append({"query": " ".join([*rng.sample(rng.choice(names).split(), k=1), rng.choice(vocab)])})
        elif kind == 2:
            w = rng.choice(vocab)
            i = rng.randrange(len(w))
            out.append({"query": w[:i] + w[i + 1:]})  # one letter dropped
        elif kind == 3:
            out.append({"query": rng.choice(idx.products).code})
        elif kind == 4:
            out.append({"query": rng.choice(vocab), "theme": rng.choice(themes)[:5], "status": "ALL"})
        elif kind == 5:
            out.append({"site": rng.choice(sites), "available_from": "2020-01", "available_to": "2021-12"})
        elif kind == 6:
            out.append({"query": rng.choice(names).lower()})
        else:
            out.append({"query": "zq" + rng.choice(vocab)[::-1]})  # nothing matches: didYouMean path
    return out


def bench_search(idx: index.CatalogIndex) -> dict:
    qs = queries(idx)
    for q in qs[:50]:
        find_products(idx, SearchProductsInput(**q))  # warm the token cache the way a running server would
    idx._token_cache.clear()
    times = []
    for q in qs:
        t0 = time.perf_counter()
        find_products(idx, SearchProductsInput(**q))
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"n": len(times), "p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1],
            "max_ms": times[-1]}


def first_search_after_start() -> dict:
    code = (
        "import time; t0 = time.perf_counter(); import os, django; "
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'eco_service.settings'); django.setup(); "
        "from catalog.index import get_index; from families.products import SearchProductsInput, find_products; "
        "r = find_products(get_index(), SearchProductsInput(query='soil temperature')); "
        "print(len(r.hits), round((time.perf_counter() - t0) * 1000, 1))"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ), check=True).stdout.split()
    wall = (time.perf_counter() - t0) * 1000
    return {"hits": int(out[0]), "in_process_ms": float(out[1]), "wall_ms_including_interpreter": round(wall, 1)}


def main() -> None:
    from catalog.services import refresh_catalogs
    from upstream.client import get_client
    from upstream.context import call_scope
    from upstream_sim.server import SimServer  # the benchmark's fake NEON; product code never imports it

    call_command("migrate", verbosity=0)
    with SimServer(seed=1, port=0) as sim:
        cfg = eco_config.load_config(env={"ECO_MCP_ECO__BASE_URL": sim.base_url,
                                          "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url,
                                          "ECO_MCP_CACHE__ENABLED": "false"}, warn=False)
        eco_config.set_config(cfg)
        for source in ("graphql", "rest"):
            async def run(source=source):
                with call_scope():
                    return await refresh_catalogs(client=get_client(), source=source, cfg=cfg)

            sim.reset()
            t0 = time.perf_counter()
            outcomes = async_to_sync(run)()
            seconds = time.perf_counter() - t0
            requests = sum(o.requests for o in outcomes)
            rows = {o.catalog: o.rows for o in outcomes}
            print(f"refresh {source:<8} {seconds:6.2f} s  {requests} upstream requests  rows={rows}  "
                  f"(simulator logged {len(sim.requests)})")
    index.reset()
    idx = index.get_index()
    t0 = time.perf_counter()
    index.build_index(idx.versions, idx.info)
    print(f"index build {1000 * (time.perf_counter() - t0):.0f} ms "
          f"({len(idx.products)} products, {len(idx.sites)} sites, {len(idx.vocab)} tokens)")
    s = bench_search(idx)
    print(f"search over {s['n']} queries: p50 {s['p50_ms']:.3f} ms  p99 {s['p99_ms']:.3f} ms  max {s['max_ms']:.3f} ms")
    f = first_search_after_start()
    print(f"first search after process start (warm database): {f['in_process_ms']} ms in process, "
          f"{f['wall_ms_including_interpreter']} ms wall including interpreter start ({f['hits']} hits)")


if __name__ == "__main__":
    main()
