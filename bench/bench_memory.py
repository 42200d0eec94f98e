"""What the in-memory catalog index costs: resident memory and traced allocations of its build.

    .venv/bin/python bench/bench_memory.py

Setup (loopback only): the simulator on a free port and its four catalogs built with
`eco_catalog_refresh` into a throw-away SQLite folder, as bench_vs_sdk does. Then, in a fresh
process with Django set up (nothing else of the service loaded), the index is built three times:
with tracemalloc (what the index holds after the build, by the line that allocated it), and
twice without, reading VmRSS (psutil) before and after each build: the first build is what a
worker pays once, the second what each index that a catalog swap leaves held costs while
`cache.max_index_entries` (default 4) keeps it. Build time is printed too. Then the index is
kept as a snapshot (catalog.index_snapshot; the builds above neither take nor write one) and
taken from it as a new process would: time, CPU, RSS (the built index still held) and traced.

Figures (simulated catalog: 197 products, 81 sites, 7,053 product-site cells; issue 19's third
session; "before" is commit 39e08b2, measured with this script's method):

                                   before      after
    traced, held by the index     54.5 MB    14.2 MB
    RSS of the first build       +63.1 MB   +18.5 MB
    RSS of a second build        +59.3 MB   +16.3 MB
    build time (wall, noisy)       0.98 s     0.77 s
    what it holds: 442,749 interval references (5,787 distinct), 63,187 interval runs (29,109
    distinct), 76,853 range texts (4,778 distinct); the index now stores each equal one once.
Taken from the kept snapshot instead (issue 19's stdio first search; load average 3.4-5.5, two
runs): 0.11-0.17 s wall, 0.106 s CPU against 1.3-1.9 s and ~1.37 s for a build; RSS +12.4-13.2 MB
(second build +16.3 MB); traced 14.9 MB against 14.2 MB built: the equal runs and intervals stay
one object each (a pickle stores an object once), only floats and ints are not shared again.
One HTTP worker with the catalog warm (bench_vs_sdk): 191.2 MB in the previous session, 142.7 MB
after, flat over a 44,594-call soak.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mixed_load import _env, _free_port, simulator_with_catalogs

REPO = Path(__file__).resolve().parents[1]


def _child() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    import django

    django.setup()
    import psutil

    from catalog import index, index_snapshot

    def rss() -> float:
        return psutil.Process().memory_info().rss / 2**20

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    # Builds: a kept snapshot would be taken instead (measured last).
    keep_load, keep_save = index_snapshot.load, index_snapshot.save
    index_snapshot.load = lambda versions, info, make: None  # type: ignore[assignment]
    index_snapshot.save = lambda idx: None  # type: ignore[assignment]
    out: dict[str, float | int] = {}
    gc.collect()
    before = rss()
    started = time.perf_counter()
    idx = index.get_index()
    out["build_s"] = round(time.perf_counter() - started, 2)
    gc.collect()
    out["first_build_rss_mb"] = round(rss() - before, 1)
    index.reset()  # the first index stays referenced by `idx`, as a held superseded index would
    gc.collect()
    before = rss()
    again = index.get_index()
    gc.collect()
    out["second_build_rss_mb"] = round(rss() - before, 1)
    del idx, again
    index.reset()
    gc.collect()
    tracemalloc.start()
    held = index.get_index()
    gc.collect()
    out["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    tracemalloc.stop()
    out["cells"] = sum(len(p.cells) for p in held.products)
    index_snapshot.load, index_snapshot.save = keep_load, keep_save
    index_snapshot.save(held)
    index.reset()  # `held` stays referenced, as for the second build
    gc.collect()
    before, started, used = rss(), time.perf_counter(), cpu()
    loaded = index.get_index()
    out["snapshot_load_s"] = round(time.perf_counter() - started, 3)
    out["snapshot_load_cpu_s"] = round(cpu() - used, 3)
    gc.collect()
    out["snapshot_load_rss_mb"] = round(rss() - before, 1)
    del loaded, held
    index.reset()
    gc.collect()
    tracemalloc.start()
    index.get_index()
    gc.collect()
    out["snapshot_traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    tracemalloc.stop()
    print(json.dumps(out))


def main() -> None:
    if "--child" in sys.argv:
        _child()
        return
    with tempfile.TemporaryDirectory(prefix="eco-bench-memory-") as data_dir:
        sim_port = _free_port()
        env = _env(data_dir, sim_port)
        sim = simulator_with_catalogs(env, sim_port)
        try:
            run = subprocess.run([sys.executable, __file__, "--child"], cwd=REPO, env=env, capture_output=True,
                                 text=True, timeout=600, check=True)
        finally:
            sim.terminate()
            sim.wait(timeout=20)
    print(run.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
