"""Benchmark of the NEON upstream simulator (is it ever the bottleneck?).

Starts the simulator in its own process pinned to one CPU core (rate limits scaled up so
the limiter never refuses), then from a client on the other core measures:
  1. a 10+ MB data file (DP4.00200.001 .h5) served from the signed storage URL, repeated;
  2. small JSON answers (/api/v0/locations/D01, ~0.8 KB) over pipelined keep-alive
     connections, so the client's own overhead does not cap the figure.

Targets: >= 200 MB/s for the big file, >= 1000 small JSON answers/s on one core.
Run: .venv/bin/python bench/bench_sim.py [--seconds 5]

Last figures (2-core VM, Python 3.11, uvicorn + httptools, server pinned to one core,
client on the other; 5 s per measurement, two runs on 2026-11-22):
  big file (11.0 MB .h5 from storage, keep-alive): 356-726 MB/s   (target >= 200)
  small JSON (/api/v0/locations/D01, 2 connections x 16 pipelined): 1,581-1,705 answers/s
  (target >= 1000). The app itself costs ~115 us per small answer; the rest is uvicorn.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _serve(port_q: mp.Queue) -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    from upstream_sim.server import SimServer

    sim = SimServer(seed=1, port=0, rate_limit_scale=1000.0)
    sim._bind()
    port_q.put((sim.port, sim.storage_port, sim.issue_token(exp_s=3600)))
    import uvicorn

    sim._server = uvicorn.Server(sim._config())
    sim._server.run(sockets=sim._sockets)


def _get(conn: http.client.HTTPConnection, path: str, headers: dict | None = None) -> bytes:
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{path}: HTTP {resp.status} {body[:200]!r}")
    return body


def bench_big_file(port: int, token: str, seconds: float) -> tuple[float, int, int]:
    api = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    month = "2023-03"
    listing = json.loads(_get(api, f"/api/v0/data/DP4.00200.001/HARV/{month}", {"X-API-Token": token}))
    files = listing["data"]["files"]
    if not files:  # pick any month with data
        raise SystemExit("no DP4.00200.001 data for HARV in " + month)
    f = max(files, key=lambda x: x["size"])
    parts = urlsplit(f["url"])
    store = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    path = parts.path + "?" + parts.query
    _get(store, path)  # first request generates the bytes
    n, total, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 5:
        total += len(_get(store, path))
        n += 1
    elapsed = time.perf_counter() - t0
    return total / elapsed / 1e6, f["size"], n


def _pipelined_worker(port: int, stop: float, depth: int, counts: list, i: int) -> None:
    """Keep `depth` requests in flight on one keep-alive connection (HTTP/1.1 pipelining),
    so the measured rate is the server's, not this Python client's per-request overhead."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = b"GET /api/v0/locations/D01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    buf = b""
    while time.perf_counter() < stop:
        sock.sendall(req * depth)
        got = 0
        while got < depth:
            head_end = buf.find(b"\r\n\r\n")
            if head_end < 0:
                buf += sock.recv(1 << 16)
                continue
            head = buf[:head_end].lower()
            if not head.startswith(b"http/1.1 200"):
                raise RuntimeError(head[:200])
            length = int(head.split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
            while len(buf) < head_end + 4 + length:
                buf += sock.recv(1 << 16)
            buf = buf[head_end + 4 + length:]
            got += 1
        counts[i] += depth
    sock.close()


def bench_small_json(port: int, seconds: float, connections: int = 2, depth: int = 16) -> float:
    counts = [0] * connections
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    _get(conn, "/api/v0/locations/D01")  # warm
    t0 = time.perf_counter()
    stop = t0 + seconds
    threads = [threading.Thread(target=_pipelined_worker, args=(port, stop, depth, counts, i))
               for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    q: mp.Queue = mp.Queue()
    proc = mp.Process(target=_serve, args=(q,), daemon=True)
    proc.start()
    port, _storage_port, token = q.get(timeout=30)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    time.sleep(0.5)
    try:
        mbps, size, n = bench_big_file(port, token, args.seconds)
        rps = bench_small_json(port, args.seconds)
    finally:
        proc.terminate()
        proc.join(5)
    print(f"big file: {size / 1e6:.1f} MB x {n} downloads -> {mbps:,.0f} MB/s (target >= 200)")
    print(f"small JSON: {rps:,.0f} answers/s on one server core (target >= 1000)")


if __name__ == "__main__":
    main()
