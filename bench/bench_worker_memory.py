"""Resident memory of one warm HTTP worker in the default embedded set-up, measured two ways.

    .venv/bin/python bench/bench_worker_memory.py [--seconds 30] [--ways A,B] [--clients 4]

Setup (loopback only): the simulator in a process of its own; a throw-away SQLite data folder,
no Redis, no broker; ONE HTTP worker (`manage.py eco_mcp --transport http`, one uvicorn worker)
pointed at the simulator through ECO_MCP_ECO__BASE_URL / ECO_MCP_ECO__GRAPHQL_URL.

- way A, "built by the process itself": the data folder is only migrated; the worker's start-up
  prewarm (on by default over HTTP) builds the four catalogs and then walks every site's
  location subtree itself. Load starts once /readyz is 200 and the subtree walk has ended.
- way B, "warm copy": the catalogs and subtrees are built beforehand by other processes
  (`eco_catalog_refresh`, then `--catalog subtrees`), as bench_vs_sdk and bench_memory do; the
  worker starts on them (`--no-prewarm`) and only reads them.

Then `--seconds` of mixed catalog calls through the real MCP SDK client over HTTP (`--clients`
concurrent sessions cycling through search/get products and sites, availability, locations,
releases, citations). Printed per way: VmRSS before the load, VmRSS (steady, after the load)
and VmHWM (peak) of the worker from /proc/<pid>/status, the calls made, and any that failed.

Figures (2-core container shared with other engineers' test runs, load average 4-8; 30 s, 4
clients, 875-8,890 calls a run, none failed; simulated catalog: 197 products, 81 sites, 3,439
location nodes). MB of VmRSS after the load (VmHWM, the peak, in brackets):

    tree                                                    way A           way B
    b093be4 (before)                                        294.1 (298.6)   229.4 (229.4)
    + the stacking engine imported by eco_stack_tables only 220.0 (225.0)   152.9 (152.9)
    + typed GraphQL parse, records let go per catalog,
      malloc_trim after each build, two glibc arenas        169.5 (179.5)   147.4 (149.4)
    + pydantic caches keys only                             160.8 (208.8)   150.8 (150.8)
    + one glibc arena, rapidfuzz on first misspelling       155.1, 155.4    148.8, 147.8
      (two runs)                                            (205.5, 205.3)  (148.8, 147.8)
    ee6b574 (+ the query engine, the dataset store)         156.5 (205.9)   -
    + a build closes the connection it wrote through        152.9, 153.0,   150.1 (150.1)
      (three runs)                                          153.3 (205.9-206.0)
    70826b0 (measured again)                                153.1 (205.8)   150.6-151.4
    + cells' range texts made when asked, not held          150.6 (205.7)   147.1 (147.1)
    + large bodies held compressed in the LocMem cache      150.4, 148.8,   147.4, 147.6,
      (three runs)                                          150.2 (205.2)   147.3 (same)
    + glibc's large-block and trim thresholds fixed at      150.1, 149.0,   144.5, 144.4,
      256 KiB (three runs; two more read 149.4 and 144.3)   148.8 (205.3)   144.2 (146.0-146.8)
    + products and sites read from the GraphQL reply a      148.0, 148.1,   144.3, 144.1,
      record at a time while their rows are built           148.2 (148.2-   144.3 (145.9-
      (three runs)                                          149.2)          146.9)
    + that reply read with ijson (yajl2_c), not a walker    148.3, 148.3    144.2 (145.7)
      of our own (two runs; one for B)                      (150.1, 148.4)
    final tree of this round (73d995c + docs, one run each,  147.9 (147.9)   143.7 (146.3)
      5,721 and 5,273 calls, none failed)

The goal, at most 150 MB after the load: met both ways since the GraphQL reply is read a record
at a time (way A 147.9-148.3 in six runs, way B 143.7-144.3).

Before the load way A read 281.3 MB at b093be4 and 144.1-145.0 MB after; way B 193.2 and 118.0.
Import cost of a worker ready to serve (django.setup, the ASGI app, every tool registered):
188.1 MB at b093be4, 113.4 MB after; pyarrow with pyarrow.compute alone is 73.4 MB, rapidfuzz 2.3.

Where way A's memory went (tracemalloc, sys._debugmallocstats, /proc/self/smaps, in a process
doing the same build): the catalog build's GraphQL reply (6.1 MB) was read into a tree of dicts
(GraphQLResponse.data) and then validated again into models, both alive at once: 50 MB of
Python objects, 70.5 MB traced peak, and `fetched` kept them until all four catalogs were stored.
After it, Python's small-object allocator held 106 arenas (111 MB) for 74.7 MB of live blocks:
34 MB of free pools inside arenas that a few survivors kept, most of them the strings pydantic-
core's string cache keeps alive (about 11,000, allocated during the parses); glibc kept another
~35 MB of freed pages (malloc_trim gave them back). Live memory after the build is only the
index (11.5 MB traced) and a few MB besides. With the typed parse the catalog build peaked at
35 MB traced but still left 85 arenas with 19.8 MB free (the cached strings); with only keys
cached the peak is higher (VmHWM 205 against 180 MB: equal month texts are no longer one object
each while the reply is read) and after build, walk and index 74 arenas hold 70.5 MB with 1.3
MB free.

Since ee6b574 (measured in a process doing the same build and walk against the simulator, then
sys._debugmallocstats and glibc's mallinfo2): the build and walk leave way A 22-24 MB above the
import baseline of 116.5 MB before any call. Of that, 7 MB is glibc heap in use: 3.5 MB the
SQLite connection that wrote the catalogs (its page cache; closing it gave back 2.7 MB of RSS,
now done after every build and walk, which took way A from 142.3 to 136.7-139.5 MB before the
load and 156.5 to 153 after), 1.8 MB the 81 subtree answers the walk stored in the in-process
answer cache (clearing them gave back 1.7 MB; not done: the walk would need a way to read
without storing, through the client and its protocol), the rest the HTTP client, its TLS
context and Django's caches. The other 16-17 MB is pymalloc: 75 arenas against 58 after import,
holding only 1 MB more live blocks; about 16 MB of free pools sit in 15-16 arenas that the build
left with a few survivors each (found with gc.get_objects(): urllib.parse's split cache,
weak references from type caches, functions and classes made on first use of a code path,
Django's per-model caches). Importing every module the build imports before it starts did not
free one of them. The load then adds 15 MB in way A and 30 MB in way B: way A's load reuses
part of those free pools.

Import baseline, where it goes (RSS deltas per top-level import in one interpreter doing what
a ready worker does; `python -X importtime` for who imports what): the MCP SDK 27 MB with what
it imports, of which cryptography 8.4 (mcp.server.request_state imports it at the top, and
mcp.server imports that) and both protocol versions' types 2.0; Celery with kombu, click,
yaml, dateutil 7 MB, loaded by django_celery_beat's models (celery.schedules), an installed
app the admin needs, and by eco_service.tasks, which the ops API imports: dropping only
django_celery_beat saved 3 MB and Celery stayed; httpx's command line (rich, pygments, click)
1.4 MB, imported by httpx itself when they are installed. None of these is ours to make lazy
without giving up the admin's schedules or patching a dependency.

Since 70826b0 (a hook in the worker dumping /proc/self/smaps_rollup, sys._debugmallocstats,
glibc's mallinfo2, tracemalloc snapshots and the LocMem store's size, before and after the load):
- The load's own working set in way B was +30 MB, of which the index was 14.6 MB of Python
  objects (tracemalloc), 2-3 MB of it each cell's range texts (7,053 dicts, 13,500 lists, 21,700
  strings decoded from the stored JSON) beside the same months as runs of intervals. The texts are
  now made from the runs when a call asks (catalog.index.Cell.ranges; the catalog stores them in
  that one form, catalog.months.to_ranges): the index is 11.5 MB, and way B 147.1 after the load.
- After the load, ways A and B held the same pymalloc (78-82 arenas, 74-78 MB live) and the same
  glibc heap in use; A's 2.3-3.5 MB more was the LocMem answer cache (84-86 entries, 1.7-2.3 MB:
  the start-up build's answers, the 81 site subtrees and the realm's hierarchy, which the build
  writes back for everyone else by design). Large bodies (8 KiB and up) are now held compressed
  there (upstream.cache; Redis entries unchanged): 0.35-0.4 MB, and A read 148.0 against B's
  148.1 once both were trimmed.
- glibc raised its mmap and trim thresholds itself after the first large free (up to 32 MB), so
  freed blocks stayed in its heap: fixed at 256 KiB (eco_core.memory), way B reads 144.2-144.5
  (its peak 146-147 is given back). Way A does not gain from it: its catalog build grows glibc's
  heap from 29 to 53 MB (peak VmHWM 205-210 MB, 90 MB over the import baseline; afterwards 23 MB
  of it free, given back by malloc_trim but in the middle of the heap, where the load's blocks
  land again), and leaves 15 pymalloc arenas with a few survivors each.
- Import baseline (RSS per module imported, in a process importing what a ready worker imports):
  django_celery_beat's models 10.1 MB with what they import first (the crontab timezone field
  loads all ~600 zoneinfo zones: 2.4 MB; celery, kombu, yaml, dateutil, click, and greenlet in
  this venv), cryptography's Rust library 6.6 MB of RSS (mcp.server.request_state), retained
  pydantic core schemas 5.0 MB over 768 models (496 the SDK's), ninja importing django.test
  (unittest, xml.dom) 2.5 MB, httpx's command line (rich, pygments) 2.2 MB in this venv only
  (not in requirements.lock). Celery leaves the web worker only with django_celery_beat, which
  the admin's schedules, the post-migrate schedule check (eco_service.bootstrap) and the schema
  record read: not done.

Before graphql_lists way A was at the 150 MB line (148.8-150.1), way B 5.5 MB under it. What way A has over B is the
catalog build's peak left in glibc's heap and pymalloc's arenas (above). That peak is the typed
records of the one GraphQL reply for products and sites: tracemalloc (one frame) in a process
doing the prewarm traced 56 MB alive once the reply was parsed into records, 4 MB more once the
product rows were built, 7 MB after the sites were stored, 1 MB at the end. Batching the rows
would not lower it; reading the reply a product at a time into rows (the records never all alive)
would. Done since (UpstreamClient.graphql_lists, models.read_graphql_lists: ijson's C parser
(yajl2_c) reads the reply's body item by item, each item validated and let go to check the reply
whole, then read and validated again as the build iterates it into rows; a reply it does not
take as a plain success goes the whole parse's way, with the same errors). In a process doing
the parse and rows alone: traced peak 59.5 MB -> 18.7 (12 of it the rows, 6 the reply's text),
VmHWM +85 MB -> +19, glibc's heap no longer grows (its arena 41.4 MB -> 18.2 after the parse),
0.99 s -> 0.56 s, with a walker of our own over the decoded text (json's raw_decode); with ijson
over the body itself (no decoded copy) 13.2 MB traced, VmHWM +13.9, 0.39 s -> 0.60 s against
that walker measured again (two runs each: a pass over ijson's events in Python checks the
envelope, and each list's pass parses the whole body). In the worker, way A's
peak VmHWM went from 205 MB to 142 before the load and 148-149 in all, and it reads 132.3-132.6
MB before the load (144-145 before), but 148.0-148.2 after it: only 1-2 MB less than before.
The build's peak was not what the load ends on (with ijson: 132.1 and 133.6 MB before the load,
VmHWM 142.3 and 142.5, 148.3 after: the same). Way A still holds 3.7-4 MB more than B after the
load (13.5 MB more before it, which the load partly reuses): the walk's 81 answers in the answer
cache and the pymalloc arenas the build and walk leave with a few survivors each (above) are
the candidates; not measured again since this change.

History, before 70826b0: way A's 150 MB not met (153 MB, 3 over). What is left is the load's own working set (the index,
11.5 MB, is built at the first call after the subtree walk) over an import baseline of 116.5 MB
(above), and in way A the pymalloc arenas the build pins (16 MB of free pools, above) and the
walk's answers in the answer cache (1.8 MB). Candidates not tried: a read through the client that
does not store its answer, for the walk; clearing the caches seen pinning arenas after the walk
(each arena needs all its survivors gone, so this would be a list to keep up, not a mechanism).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed_load import _env, _free_port, _stop, _wait_http

REPO = Path(__file__).resolve().parents[1]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("eco_search_products", {"query": "soil temperature", "limit": 10}),
    ("eco_get_product", {"product": "DP1.00041.001"}),
    ("eco_search_sites", {"query": "forest"}),
    ("eco_get_site", {"site": "HARV"}),
    ("eco_get_availability", {"product": "DP1.10003.001"}),
    ("eco_find_locations", {"root": "HARV", "location_type": "TOWER"}),
    ("eco_get_location", {"name": "TOWER100450", "include": ["all"]}),
    ("eco_search_products", {"query": "bird counts"}),
    ("eco_list_releases", {}),
    ("eco_get_release", {"release": "latest"}),
    ("eco_get_citation", {"product": "DP1.00041.001"}),
    ("eco_find_locations", {"root": "REALM", "location_type": "SITE", "limit": 100}),
    ("eco_get_product", {"product": "DP1.10003.001"}),
    ("eco_search_sites", {"query": "Harvard"}),
    ("eco_get_availability", {"product": "DP1.00041.001", "site": "HARV"}),
]


def _status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of `pid` in MB (Linux /proc)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def _subtrees_built(data_dir: str) -> bool:
    try:
        with sqlite3.connect(f"file:{data_dir}/eco.sqlite3?mode=ro", uri=True, timeout=1) as db:
            row = db.execute("SELECT refreshed_at, progress_at FROM catalog_catalogstate WHERE catalog = 'subtrees'"
                             ).fetchone()
    except sqlite3.Error:
        return False
    return bool(row and row[0] and not row[1])


def _wait_ready(port: int, data_dir: str, seconds: float = 600.0) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            ready = False
        if ready and _subtrees_built(data_dir):
            return round(time.monotonic() - started, 1)
        time.sleep(0.5)
    raise RuntimeError("the worker did not finish its catalogs and subtrees")


async def _load(url: str, seconds: float, clients: int) -> dict[str, Any]:
    from mcp import Client

    stop = time.monotonic() + seconds
    done: list[int] = [0, 0]
    failed: dict[str, int] = {}

    async def one(offset: int) -> None:
        async with Client(url, mode="2026-07-28") as client:
            for name, args in itertools.islice(itertools.cycle(CALLS), offset, None):
                if time.monotonic() >= stop:
                    return
                result = await client.call_tool(name, args)
                done[0] += 1
                if result.is_error:
                    code = (result.structured_content or {}).get("error", {}).get("code", "?")
                    failed[f"{name}:{code}"] = failed.get(f"{name}:{code}", 0) + 1

    await asyncio.gather(*(one(i * 3) for i in range(clients)))
    return {"calls": done[0], "failed": failed}


def _way(way: str, seconds: float, clients: int) -> dict[str, Any]:
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix=f"eco-bench-worker-{way}-") as data_dir:
        sim_port, port = _free_port(), _free_port()
        env = _env(data_dir, sim_port)
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "manage.py", "eco_sim", "--port", str(sim_port), "--storage-port",
                 str(_free_port()), "--rate-limit-scale", "1000"], cwd=REPO, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_http(f"http://127.0.0.1:{sim_port}/_sim/faults")
            subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=REPO, env=env, check=True)
            serve = [sys.executable, "manage.py", "eco_mcp", "--transport", "http", "--bind-address", "127.0.0.1",
                     "--bind-port", str(port), "--log-level", "warning"]
            if way == "B":
                for catalog in ([], ["--catalog", "subtrees"]):
                    subprocess.run([sys.executable, "manage.py", "eco_catalog_refresh", "--json", *catalog], cwd=REPO,
                                   env=env, check=True, stdout=subprocess.DEVNULL)
                serve.append("--no-prewarm")
            procs.append(subprocess.Popen(serve, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            pid = procs[-1].pid
            _wait_http(f"http://127.0.0.1:{port}/healthz")
            out: dict[str, Any] = {"way": way, "ready_s": _wait_ready(port, data_dir)}
            out["before_load"] = _status(pid)
            out.update(asyncio.run(_load(f"http://127.0.0.1:{port}/mcp", seconds, clients)))
            time.sleep(1.0)
            out["after_load"] = _status(pid)
            return out
        finally:
            for proc in reversed(procs):
                _stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--ways", default="A,B", help="A (built by the worker), B (warm copy), or both")
    opts = parser.parse_args()
    if not 0 < opts.seconds <= 600 or not 1 <= opts.clients <= 64:
        parser.error("bounded run: seconds 0-600, clients 1-64")
    for way in opts.ways.split(","):
        print(json.dumps(_way(way.strip().upper(), opts.seconds, opts.clients)), flush=True)


if __name__ == "__main__":
    main()
