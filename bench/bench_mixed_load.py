"""Mixed load: do catalog-served calls keep their throughput while upstream-bound calls wait?

    .venv/bin/python bench/bench_mixed_load.py [--seconds 10] [--catalog-clients 32] [--upstream-clients 64]
                                               [--delay 3]

Setup (loopback only): the simulator and one HTTP server (`manage.py eco_mcp --transport http`,
one uvicorn worker, SQLite in a throw-away data folder) each run as their own process; the
catalogs are built once with `eco_catalog_refresh` before the server starts. Then a latency
fault makes every `/api/v0/products/...` answer take `--delay` seconds, so upstream-bound calls
hold their upstream slots and queue for them.

Load (closed loop, raw JSON-RPC over httpx, stateless 2026-07-28 requests):
- catalog-only: eco_search_products (query) and eco_get_product without include, alternating;
- upstream-bound: eco_get_product include=["abstract"] over all ~200 products (each a cache
  miss against the slowed route; answers are success or upstream_unavailable 'busy').
Phase 1 runs the catalog clients alone, phase 2 the same catalog clients beside the upstream
clients, each for `--seconds`. Printed: catalog-only calls/s, p50 and p99 per phase, the ratio,
and what the upstream-bound calls got.

Last figures (2-core container, load average ~5-6 from other engineers' test runs, so absolute
numbers are low and noisy; 32 catalog clients, 64 upstream clients, 3 s delay, 8 s per phase):

                                      alone calls/s  p50 ms  p99 ms | mixed calls/s  p50 ms  p99 ms | ratio
    before (every sync index/ORM hop    61.0        312    1928  |     11.2      1049    4233   | 0.18
      on asgiref's one thread-sensitive thread; throughput then counted over the whole run,
      including the upstream clients' 12 s tail, which understates "mixed")
    after: catalog reads on their own   90.4        218    1699  |     52.6       387    2294   | 0.58
      4-thread pool (thread_sensitive=False, connections closed per read), the per-tool
      due-check moved off the shared thread, throughput counted inside the window only
    Upstream-bound calls in the mixed phase: 24 ok, 48 upstream_unavailable 'busy' (bounded
    slot wait, 4 slots held 3 s each), p50 11 s.

The 80 % goal is NOT met yet on this box: what remains is CPU on the one event loop (the
upstream calls' strict parse of each ~800 KB product record, their SSE framing and error
results) on 2 cores shared with the load generator, the simulator and other test runs.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench-mixed", "version": "1"},
}
CATALOG_CALLS = [
    ("eco_search_products", {"query": "soil temperature"}),
    ("eco_get_product", {"product": "DP1.00041.001"}),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(data_dir: str, sim_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "ECO_API_TOKEN"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    env.update({
        "ECO_MCP_DATA_DIR": data_dir,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
        "ECO_MCP_SERVER__LOG_LEVEL": "warning",
        "ECO_MCP_ECO__BASE_URL": f"http://127.0.0.1:{sim_port}/api/v0",
        "ECO_MCP_ECO__GRAPHQL_URL": f"http://127.0.0.1:{sim_port}/graphql",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(48),
    })
    return env


def _wait_http(url: str, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def _body(name: str, arguments: dict, rid: int) -> tuple[dict, dict]:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name,
               "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return body, headers


def _outcome(text: str) -> str:
    """'ok' or the error code, from a JSON or SSE-framed reply."""
    for line in text.splitlines():
        line = line.removeprefix("data:").strip()
        if line.startswith("{"):
            msg = json.loads(line)
            result = msg.get("result") or {}
            if "error" in msg:
                return f"jsonrpc {msg['error'].get('code')}"
            if result.get("isError"):
                return result["structuredContent"]["error"]["code"]
            return "ok"
    return "unreadable"


async def _client_loop(client: httpx.AsyncClient, url: str, calls, stop: float, times: list[float],
                       outcomes: Counter, ended: list[float] | None = None) -> None:
    rid = itertools.count(1)
    for name, args in itertools.cycle(calls):
        if time.perf_counter() >= stop:
            return
        body, headers = _body(name, args, next(rid))
        t0 = time.perf_counter()
        try:
            resp = await client.post(url, json=body, headers=headers)
            outcome = _outcome(resp.text) if resp.status_code == 200 else f"http {resp.status_code}"
        except httpx.HTTPError as exc:
            outcome = type(exc).__name__
        now = time.perf_counter()
        times.append(now - t0)
        outcomes[outcome] += 1
        if ended is not None:
            ended.append(now)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def _phase(url: str, seconds: float, catalog_clients: int, upstream_calls: list | None,
                 upstream_clients: int) -> dict:
    limits = httpx.Limits(max_connections=catalog_clients + upstream_clients + 4, max_keepalive_connections=None)
    cat_times: list[float] = []
    up_times: list[float] = []
    cat_out: Counter = Counter()
    cat_ended: list[float] = []
    up_out: Counter = Counter()
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        await _client_loop(client, url, CATALOG_CALLS, time.perf_counter() + 1.0, [], Counter())  # warm-up
        started = time.perf_counter()
        stop = started + seconds
        tasks = [_client_loop(client, url, CATALOG_CALLS, stop, cat_times, cat_out, cat_ended)
                 for _ in range(catalog_clients)]
        if upstream_calls:
            # Each upstream client starts at its own offset so the products differ (cache misses).
            tasks += [_client_loop(client, url, upstream_calls[i::upstream_clients] or upstream_calls, stop,
                                   up_times, up_out) for i in range(upstream_clients)]
        await asyncio.gather(*tasks)
    # Throughput inside the measured window only: upstream-bound clients finish their last
    # (slow) call well after `stop`, which must not count against the catalog calls.
    in_window = sum(1 for t in cat_ended if t <= stop)
    out = {"catalog_calls_per_s": round(in_window / seconds, 1),
           "catalog_p50_ms": round(statistics.median(cat_times) * 1000, 1) if cat_times else None,
           "catalog_p99_ms": round(_pct(cat_times, 0.99) * 1000, 1), "catalog_outcomes": dict(cat_out)}
    if upstream_calls:
        out.update({"upstream_calls": len(up_times), "upstream_p50_ms": round(statistics.median(up_times) * 1000, 1)
                    if up_times else None, "upstream_outcomes": dict(up_out)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--catalog-clients", type=int, default=32)
    parser.add_argument("--upstream-clients", type=int, default=64)
    parser.add_argument("--delay", type=float, default=3.0, help="seconds each /products/{code} answer takes")
    opts = parser.parse_args()
    if not 0 < opts.seconds <= 120 or not 1 <= opts.catalog_clients <= 256 or not 0 <= opts.upstream_clients <= 512:
        parser.error("bounded run: seconds 0-120, catalog clients 1-256, upstream clients 0-512")

    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="eco-bench-mixed-") as data_dir:
        sim_port, port = _free_port(), _free_port()
        env = _env(data_dir, sim_port)
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "manage.py", "eco_sim", "--port", str(sim_port), "--storage-port", str(_free_port()),
                 "--rate-limit-scale", "1000"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
            _wait_http(f"http://127.0.0.1:{sim_port}/_sim/faults")
            subprocess.run([sys.executable, "manage.py", "migrate", "--verbosity", "0"], cwd=REPO, env=env, check=True)
            subprocess.run([sys.executable, "manage.py", "eco_catalog_refresh", "--json"], cwd=REPO, env=env,
                           check=True, stdout=subprocess.DEVNULL)
            procs.append(subprocess.Popen(
                [sys.executable, "manage.py", "eco_mcp", "--transport", "http", "--bind-address", "127.0.0.1",
                 "--bind-port", str(port), "--no-prewarm", "--log-level", "warning"],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_http(f"http://127.0.0.1:{port}/healthz")
            url = f"http://127.0.0.1:{port}/mcp"
            products = httpx.get(f"http://127.0.0.1:{sim_port}/api/v0/products", timeout=30).json()["data"]
            upstream_calls = [("eco_get_product", {"product": p["productCode"], "include": ["abstract"]})
                              for p in products]
            httpx.post(f"http://127.0.0.1:{sim_port}/_sim/faults", timeout=5,
                       json={"kind": "latency", "route": r"^/api/v0/products/", "delay_s": opts.delay})
            alone = asyncio.run(_phase(url, opts.seconds, opts.catalog_clients, None, 0))
            mixed = asyncio.run(_phase(url, opts.seconds, opts.catalog_clients, upstream_calls, opts.upstream_clients))
        finally:
            for proc in reversed(procs):
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
    ratio = mixed["catalog_calls_per_s"] / alone["catalog_calls_per_s"] if alone["catalog_calls_per_s"] else 0.0
    print(json.dumps({"settings": vars(opts), "alone": alone, "mixed": mixed,
                      "catalog_throughput_ratio": round(ratio, 3)}, indent=2))


if __name__ == "__main__":
    main()
