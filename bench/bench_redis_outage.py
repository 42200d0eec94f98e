"""Redis outage under load: two web workers on PostgreSQL and a Redis of this run's own, the
bench_load mix of every HTTP tool, and Redis killed (SIGKILL) in the middle of the load and
started again (empty) on the same port.

    .venv/bin/python bench/bench_redis_outage.py [--clients 50] [--seconds 45] [--kill-at 10] [--down-for 20]
        [--processes 2] [--postgres postgresql://postgres@127.0.0.1:5432/redis_outage_bench] [--rate-limit-scale 1]

The simulator, the service (`uvicorn eco_service.asgi:application --workers 2`, DATABASE_URL =
--postgres, dropped and created afresh, REDIS_URL = the run's own redis-server) and the load are
bench_load's (see there). Printed: outcomes by phase (calls started before the kill, while Redis
was down, after the restart) and by tool, the service log's "unreachable" warnings and "back"
lines (one of each per worker is the goal: one per outage per process), its ERROR/Traceback
lines, and whether Redis holds cache and rate-limit keys again at the end.

Goal: 0 outcomes other than ok and rate_limited in every phase (before the fallback, the same
kind of run gave 792 internal_error of 5,558 calls while Redis was down and 9 more 16-19 s after
it came back).

Last figures (2-core container, load average 7-10 from other engineers' test runs, so few calls;
50 clients, 45 s, Redis killed at 10 s for 20 s, rate-limit scale 1; calls by the phase they
started in, "busy" = upstream_unavailable while waiting for an upstream slot, retryable):

  code                       before the kill          Redis down                after the restart     log
  without the fallback       119: ok 85, internal 34  976: ok 540, internal 436 220: ok 218, internal 2 tracebacks
  fallback, processes 4      62: ok 62                296: ok 270, busy 26      208: ok 206, busy 2     2 warn, 2 back
  fallback, processes 2 (a)  50: ok 50                225: ok 217, busy 8       174: ok 166, busy 8     3 warn, 3 back
  fallback, processes 2 (b)  50: ok 50                180: ok 166, busy 14      142: ok 139, busy 3     2 warn, 2 back

No internal_error and no ERROR line with the fallback. Without the cache every call that reads the
upstream asks it, on each worker's share of the budget, so some wait for a slot ("busy"); after the
restart Redis is empty and the cache fills again. Run (a) logged a second, short outage in one
worker (this file did not keep the lines then): on a box this starved, a 1 s
cache.redis_timeout_s can expire before a reply is read; it costs a warning and a second of
cache misses, nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO  # found through the path insertion above
from bench_load import (
    BUDGET_ENV,
    Picker,
    Pools,
    Stats,
    _fresh_postgres,
    _log_errors,
    _ready,
    check_table,
    list_tools,
    outcome,
    warm_up,
)
from bench_mixed_load import _body, _env, _free_port, _wait_http
from bench_vs_sdk import _stop


class OwnRedis:
    """redis-server on a free loopback port, no persistence: kill() is a crash, start() again is empty."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        program = shutil.which("redis-server")
        if program is None:
            raise SystemExit("redis-server is not installed")
        self.proc = subprocess.Popen([program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--daemonize", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 15
        while time.monotonic() < end:
            try:
                if redis.Redis.from_url(self.url, socket_timeout=1).ping():
                    return
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def keys(self) -> list[str]:
        import redis

        return [k.decode() for k in redis.Redis.from_url(self.url, socket_timeout=2).scan_iter(count=1000)]


async def _client(url: str, pick: Picker, stop: float, phase: dict[str, str], stats: dict[str, Stats],
                  call_timeout: float) -> None:
    import httpx

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(call_timeout, connect=10)) as http:
        rid = 0
        while time.perf_counter() < stop:
            rid += 1
            tool, args = pick()
            body, headers = _body(tool, args, rid)
            started_in, t0 = phase["now"], time.perf_counter()
            try:
                resp = await http.post(url, content=json.dumps(body).encode(), headers=headers)
                result = outcome(resp.status_code, resp.content)
            except httpx.TimeoutException:
                result = ("timeout", None)
            except httpx.HTTPError as exc:
                result = (f"transport_{type(exc).__name__}", None)
            now = time.perf_counter()
            stats[started_in].add(tool, result, now - t0, now <= stop)


async def run_load(url: str, pools: Pools, redis: OwnRedis, *, clients: int, seconds: float, kill_at: float,
                   down_for: float, seed: int, call_timeout: float) -> dict[str, Any]:
    tools = await list_tools(url)
    check_table(tools)
    phase = {"now": "before"}
    stats = {p: Stats() for p in ("before", "down", "after")}

    async def outage() -> None:
        await asyncio.sleep(kill_at)
        phase["now"] = "down"
        await asyncio.to_thread(redis.kill)
        await asyncio.sleep(down_for)
        await asyncio.to_thread(redis.start)
        phase["now"] = "after"

    stop = time.perf_counter() + seconds
    await asyncio.gather(outage(), *(_client(url, Picker(tools, pools, seed * 100_000 + i), stop, phase, stats,
                                             call_timeout) for i in range(clients)))
    report: dict[str, Any] = {}
    for name, st in stats.items():
        everything = Counter[str]()
        for c in st.outcomes.values():
            everything.update(c)
        report[name] = {"calls": sum(everything.values()), "outcomes": dict(everything.most_common()),
                        "errors_other_than_rate_limited": sum(v for k, v in everything.items()
                                                              if k not in ("ok", "rate_limited")),
                        "error_reasons": dict(st.reasons.most_common())}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--kill-at", type=float, default=10.0)
    parser.add_argument("--down-for", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--call-timeout", type=float, default=120.0)
    parser.add_argument("--rate-limit-scale", type=float, default=1.0)
    parser.add_argument("--warm-up-calls", type=int, default=8)
    parser.add_argument("--processes", type=int, default=2,
                        help="eco.rate_limit.processes: each worker's share of the budget while Redis is down")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/redis_outage_bench",
                        help="dropped and created afresh (its name must contain 'bench')")
    opts = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (1 <= opts.clients <= 1000 and 0 < opts.seconds <= 600 and opts.kill_at + opts.down_for < opts.seconds):
        parser.error("bounded run: 1-1000 clients, 0-600 seconds, the restart inside the run")
    from upstream_sim.tokens import issue_token

    procs: list[subprocess.Popen] = []
    redis = OwnRedis()
    with tempfile.TemporaryDirectory(prefix="eco-bench-redis-outage-") as data_dir:
        sim_port, port = _free_port(), _free_port()
        env = _env(data_dir, sim_port)
        token = issue_token(opts.seed, exp_s=86400)
        env.update({"ECO_TOKEN": token, "ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP": "true",
                    "ECO_MCP_SERVER__TRANSPORT": "http", "ECO_MCP_SERVER__LOG_LEVEL": "info",
                    "ECO_MCP_ECO__RATE_LIMIT__PROCESSES": str(opts.processes)})
        if opts.rate_limit_scale != 1.0:
            env.update({f"ECO_MCP_ECO__RATE_LIMIT__{k}": str(max(1, round(v * opts.rate_limit_scale)) if "BURST" in k
                                                              else v * opts.rate_limit_scale)
                        for k, v in BUDGET_ENV.items()})
        sim = f"http://127.0.0.1:{sim_port}"
        log = Path(data_dir) / "service.log"
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "manage.py", "eco_sim", "--port", str(sim_port), "--storage-port", str(_free_port()),
                 "--seed", str(opts.seed), "--rate-limit-scale", str(opts.rate_limit_scale)], cwd=REPO, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_http(f"{sim}/_sim/faults")
            _fresh_postgres(opts.postgres)
            redis.start()
            env.update({"DATABASE_URL": opts.postgres, "REDIS_URL": redis.url,
                        "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(dir=data_dir)})
            cmd = [str(Path(sys.executable).parent / "uvicorn"), "eco_service.asgi:application", "--host",
                   "127.0.0.1", "--port", str(port), "--workers", "2", "--log-level", "warning"]
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT))
            base = f"http://127.0.0.1:{port}"
            pools = Pools.from_simulator(f"{sim}/api/v0", issue_token(opts.seed, exp_s=86401))
            _ready(base, in_a_row=3)
            warm_up(f"{base}/mcp", opts.warm_up_calls)
            report = asyncio.run(run_load(f"{base}/mcp", pools, redis, clients=opts.clients, seconds=opts.seconds,
                                          kill_at=opts.kill_at, down_for=opts.down_for, seed=opts.seed,
                                          call_timeout=opts.call_timeout))
            keys = redis.keys()
            text = log.read_text(errors="replace")
            report["service_log"] = {
                "unreachable_warnings": text.count("is unreachable ("),
                "back_lines": text.count("is back after"),
                "errors": _log_errors(log),
                "redis_lines": [ln[:240] for ln in text.splitlines() if "eco.upstream.redis" in ln][:10],
            }
            report["redis_keys_at_end"] = {"cache": sum(":up:" in k for k in keys),
                                           "rate_limit": sum(k.startswith("eco:rl:") for k in keys)}
        finally:
            for proc in reversed(procs):
                _stop(proc)
            redis.kill()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
