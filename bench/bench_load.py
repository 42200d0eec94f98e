"""Load: 200 concurrent MCP clients for 60 s on a realistic mix of every HTTP tool.

    .venv/bin/python bench/bench_load.py [--setup one|two|both] [--clients 200] [--seconds 60]
        [--postgres postgresql://postgres@127.0.0.1:5432/load_bench] [--redis redis://127.0.0.1:6379/1]
        [--warm-up-calls 8] [--rate-limit-scale 1] [--call-timeout 120] [--seed 1]

Setups (each with a simulator of its own at NEON's real rate limits, `manage.py eco_sim`, seed 1,
anonymous 200 burst + 2/s per IP, a token 2000 burst + 8/s):
- one: `manage.py eco_mcp --transport http` (one uvicorn worker, the embedded default: SQLite in
  a throw-away data folder, in-process cache and rate-limit bucket, no broker);
- two: `uvicorn eco_service.asgi:application --workers 2` with DATABASE_URL (the --postgres
  database, dropped and created afresh) and REDIS_URL (the --redis database, FLUSHDB first): two
  web replicas sharing one catalog and one upstream rate-limit budget.
Both point at the simulator with ECO_MCP_ECO__BASE_URL / ECO_MCP_ECO__GRAPHQL_URL and carry a
simulator token (ECO_TOKEN, lent to HTTP callers with server.share_config_token_over_http) so
file listings and sample views work. The service builds its catalogs at start (prewarm) and the
load begins once /readyz says ready.

Mix: the tools are the ones tools/list shows over HTTP (eco_download_files is stdio-only); each
needs a row in TABLE (its weight and weighted argument sets) or the run stops before it starts,
so a new tool joins the mix the day it is registered. Arguments name real simulated products,
sites, site-months, locations, documents and prototype datasets (%product%, %cell.site%, ...
drawn per call from what the simulator serves), so detail calls miss the cache the way a crowd
of agents would and spend the upstream budget. Each client is one keep-alive connection
(httpx.AsyncClient, max one connection) sending stateless 2026-07-28 tools/call requests back to
back; a call gets --call-timeout seconds, after which it counts as a hang ("timeout").

Printed: calls/s (answers inside the window), p50/p99 per tool, counts by outcome per tool (ok,
each error code, jsonrpc_/http_/transport_ failures, timeout), the requests the simulator saw per
identity against its limit (burst + rate x seconds) over the service's lifetime and over the
load alone, and its 429s,
the resident memory of each worker (psutil, RSS incl. children) before and after, cores busy per
process, and ERROR/Traceback lines in the service's log. Goals (issue 22): 0 outcomes other than
ok and rate_limited; the simulator at <= 90 % of its limit on two workers; never a 429 reaching a
caller as anything but rate_limited.

Before the clients start, each worker gets sequential catalog calls on new connections
(--warm-up-calls). This run found a race that made them necessary: get_index marked the index
checked before it had built the new one, so every other caller meanwhile got the superseded index,
whose catalogs looked missing, and each rebuilt the product and site catalogs on the event loop
(20 clients right after /readyz took 100-250 s a call; the worker grew to 1 GB). Fixed in commit
6229997 (the check counts once its index is installed; one first-use build per loop; rows built
off the loop; tests/catalog/test_index_rebuild_race.py, test_first_use_build_once.py). After the
fix, started cold (--warm-up-calls 0), one worker, 50 clients, 20 s, load average 1.8-3.6:
36.9 calls/s, 788 calls, p50 280 ms, 0 errors other than rate_limited (17), simulator at 90.0 %
of its anonymous limit during the load and 0 429s, worker 211 -> 253 MB.

Last figures (product at commit bac4f89, 2-core container shared with other engineers' test
runs). Run A, the box fairly quiet (load average 2.6-3.2, the others using 0.67 of the 2 cores):

  setup (60 s, 200 clients)          one worker, SQLite      two workers, PostgreSQL + Redis
  calls/s (answers in the window)    78.4                    62.9
  p50 / p99 over all calls           139 / 15048 ms          260 / 17335 ms
  outcomes                           ok 4187, rate_lim. 716  ok 3370, rate_limited 602
  errors other than rate_limited     0                       0
  simulator during the load, anon.   300 of 345 = 86.9 %     295 of 341 = 86.4 %
  simulator during the load, token   345 of 2580 = 13.4 %    288 of 2566 = 11.2 %
  simulator 429 answers              0                       0
  RSS per worker before -> after     220 -> 304 MB           303 -> 339, 227 -> 265 MB
  cores busy: service / simulator    0.46 / 0.24             0.28 + 0.30 / 0.23
  cores busy: load generator         0.19                    0.22

Per tool (run A, one worker; two workers alike but slower, probably because each worker had
about a third of a core and reads its catalog and cache over PostgreSQL and Redis, not profiled):
catalog-served tools answer at
p50 50-130 ms (search_products 92, search_sites 101, get_availability 61, get_citation 50,
list_releases 109, ping 71) with no error. Upstream-bound ones wait on the anonymous budget
(180 + 1.8/s, 10 % under the simulator's), which 200 agents oversubscribe: get_location p50
10.5 s (163 of 219 rate_limited), find_locations 10.6 s (90 of 230), graphql 9.9 s (86 of 171),
get_document 10.7 s (85 of 105), get_release 1.6 s (71 of 196). Token calls (list_files 855 ms,
get_sample 85 ms) are never rate-limited: 13 % of the token budget.

Goals met in run A: 0 errors other than rate_limited on both setups; the simulator at <= 90 % of
its limit (86-87 % of the anonymous one, the binding one, during the load; 81.6 % over the two
workers' lifetime) with not one 429, so no 429 reached a caller at all; every call that found
the budget spent answered rate_limited after waiting at most eco.rate_limit.max_wait_s.

Run B, the box busy (CPU pressure /proc/pressure/cpu "some" ~98 %, load average ~7, the others
using 1.3-1.5 cores): one worker 36.4 calls/s, p50 1014 ms, 169 upstream_unavailable (144
"busy"); two workers 43.5 calls/s, 6 upstream_unavailable "busy" (an earlier busy run: 120 and
121); simulator 50 % / 84 % anonymous, 0 429s; RSS 220 -> 289 MB and 227/300 -> 263/336 MB.
"busy" means a call waited more than connect_timeout_s (10 s) for one of eco.max_concurrency (4)
upstream slots. Measured inside one worker under load like run B's (httpx trace hooks, py-spy):
every phase of a request to the simulator took 50-900 ms (an empty body "sent" in 0.9 s) while
the simulator answered other clients in <= 33 ms, the service's main thread sat 84 % in epoll and
its /healthz stalled up to 2.4 s, and an idle process on the same box woke within 52 ms: the
service's threads were waiting for a CPU, the four slots turned slowly and the queue behind them
passed 10 s. With the CPU back (run A) there was not one "busy" answer.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import REPO, percentile  # found through the path insertion above
from bench_mixed_load import _body, _Cpu, _env, _free_port, _wait_http
from bench_vs_sdk import _stop

STDIO_ONLY = {"eco_download_files"}
Args = dict[str, Any]
# tool -> (its share of calls, [(weight, arguments)]). %name% is filled per call from Pools.
TABLE: dict[str, tuple[float, list[tuple[float, Args]]]] = {
    "eco_search_products": (14, [
        (3, {"query": "soil temperature"}), (2, {"query": "bird counts"}), (2, {"query": "precipitation", "limit": 10}),
        (1, {"query": "canopy nitrogen foliar"}), (1, {"science_team": "TIS"}), (1, {"site": "%site%"}),
        (1, {"domain_code": "D10", "sort": "productName"}), (1, {"status": "ALL", "limit": 100})]),
    "eco_get_product": (10, [
        (6, {"product": "%product%"}), (3, {"product": "%product%", "include": ["abstract"]}),
        (1, {"product": "DP1.00041.001", "include": ["all"]})]),
    "eco_search_sites": (7, [
        (3, {"query": "forest"}), (1, {"state_code": "CO"}), (1, {"domain_code": "D10"}),
        (1, {"latitude": 42.5, "longitude": -72.2, "radius_km": 300}), (1, {"product": "%product%"})]),
    "eco_get_site": (6, [
        (4, {"site": "%site%"}), (1, {"site": "%site%", "include": ["all"]}),
        (1, {"site": "HARV", "products_query": "soil"})]),
    "eco_get_availability": (8, [
        (3, {"product": "%product%"}), (3, {"product": "%cell.product%", "site": "%cell.site%"}),
        (1, {"site": "%site%"}), (1, {"product": "%product%", "release": "RELEASE-2023"})]),
    "eco_list_files": (6, [
        (4, {"product": "%cell.product%", "site_codes": ["%cell.site%"], "start_month": "%cell.month%"}),
        (1, {"product": "%cell.product%", "site_codes": ["%cell.site%"], "start_month": "%cell.month%",
             "detail": "summary"}),
        (1, {"product": "%cell.product%", "site_codes": ["%cell.site%"], "start_month": "%cell.month%",
             "include_urls": False})]),
    "eco_get_citation": (4, [
        (3, {"product": "%product%"}), (1, {"product": "%product%", "format": "bibtex"}),
        (1, {"prototype_uuid": "%prototype%"})]),
    "eco_list_releases": (2, [(4, {}), (1, {"include_artifact_urls": True})]),
    "eco_get_release": (3, [
        (2, {"release": "latest"}), (1, {"release": "RELEASE-2024", "product_code": "%product%"}),
        (1, {"release": "latest", "include": ["products", "sites"]})]),
    "eco_find_locations": (4, [
        (2, {"root": "%site%"}), (1, {"root": "REALM", "location_type": "SITE", "limit": 100}),
        (1, {"root": "%site%", "location_type": "TOWER"}),
        (1, {"location_type": "TOWER", "latitude": 42.5, "longitude": -72.2, "radius_km": 100})]),
    "eco_get_location": (4, [
        (3, {"name": "%location%"}), (1, {"name": "%location%", "include": ["all"]}), (1, {"name": "%site%"})]),
    "eco_search_prototype_datasets": (2, [
        (1, {"theme": "ecohydro"}), (1, {}),
        (1, {"query": "prototype data", "start_year": 2015, "end_year": 2018, "file_type": "csv"})]),
    "eco_get_prototype_dataset": (2, [
        (2, {"uuid": "%prototype%"}), (1, {"uuid": "%prototype%", "include": ["all"], "include_urls": False})]),
    "eco_get_document": (2, [
        (3, {"spec_number": "%spec%"}), (1, {"spec_number": "%spec%", "extract_text": True, "pages": "1"})]),
    "eco_list_sample_classes": (2, [(1, {}), (1, {"sample_tag": "SHARED.TAG.2019"}), (1, {"query": "fieldData"})]),
    "eco_get_sample": (2, [
        (1, {"barcode": "A00000123456"}),
        (1, {"sample_tag": "SHARED.TAG.2019", "sample_class": "cfc_fieldData_in.sampleID", "degree": 2})]),
    "eco_search_taxonomy": (4, [
        (2, {"taxon_type_code": "TICK"}), (1, {"taxon_type_code": "BIRD", "limit": 50}),
        (1, {"scientific_name": "Quercus a"}), (1, {"genus": "Quercus"})]),
    "eco_graphql": (3, [
        (3, {"query": '{ site(siteCode: "%site%") { siteCode siteName domainCode } }'}),
        (1, {"introspect_type": "Site"})]),
    "eco_ping": (2, [(9, {}), (1, {"check_api": True})]),
}
# Listed over HTTP but left out of the load, with the reason: the run stops if a listed tool is
# neither here nor in TABLE.
NOT_LOADED = {"eco_describe_tables": "reads each product's variables file from storage, which the load's "
                                     "configuration does not allow; its own tests cover it over HTTP",
             "eco_stack_tables": "over HTTP it queues a build for the Celery workers and downloads from storage, "
                                 "which the load's configuration does not allow; its own tests cover it with a "
                                 "real worker",
             "eco_query_tables": "needs a stacked dataset in the server's store, which only eco_stack_tables "
                                 "builds; bench_query measures its queries",
             "eco_plot_tables": "charts a stacked dataset in the server's store, which only eco_stack_tables "
                                "builds; bench_plot measures its charts"}
PLACEHOLDER = re.compile(r"%([a-z.]+)%")
GOAL_PERCENT = 90.0


def check_table(listed: list[str]) -> None:
    """Every tool HTTP lists has a row, and every row is a listed tool: a tool registered without
    one (or a row left behind by a removed tool) stops the run before it starts."""
    missing = sorted(set(listed) - set(TABLE) - set(NOT_LOADED))
    stale = sorted(set(TABLE) - set(listed))
    if missing or stale:
        raise SystemExit(f"bench_load TABLE is out of date: tools listed over HTTP without a row {missing}, "
                         f"rows for tools not listed {stale}; add each tool's weight and argument sets")


@dataclass
class Pools:
    """Real names from the simulator, so the argument sets name what exists."""

    products: list[str]
    sites: list[str]
    cells: list[tuple[str, list[tuple[str, list[str]]]]]  # product -> [(site, months)]
    locations: list[str]
    specs: list[str]
    prototypes: list[str]

    @classmethod
    def from_simulator(cls, api: str, token: str) -> Pools:
        """`token` is the load generator's own (not the service's), so these requests spend
        neither of the service's budgets and simulator_usage leaves them out."""
        with httpx.Client(base_url=api, timeout=60, headers={"X-API-Token": token}) as http:
            products = http.get("/products").json()["data"]
            sites = [s["siteCode"] for s in http.get("/sites").json()["data"]]
            protos = [p["uuid"] for p in http.get("/prototype/datasets").json()["data"]]
            locations = [name for site in sites[:: max(1, len(sites) // 8)]
                         for name in http.get(f"/locations/{site}").json()["data"]["locationChildren"][:12]]
        active = [p for p in products if p["productStatus"] == "ACTIVE" and p["siteCodes"]]
        return cls(products=[p["productCode"] for p in active], sites=sites,
                   cells=[(p["productCode"], [(s["siteCode"], s["availableMonths"]) for s in p["siteCodes"]
                                              if s["availableMonths"]]) for p in active],
                   locations=locations, specs=sorted({s["specNumber"] for p in products for s in p["specs"]}),
                   prototypes=protos)

    def draw(self, rng: random.Random) -> dict[str, str]:
        product, site_months = rng.choice(self.cells)
        site, months = rng.choice(site_months)
        return {"product": rng.choice(self.products), "site": rng.choice(self.sites),
                "cell.product": product, "cell.site": site, "cell.month": rng.choice(months),
                "location": rng.choice(self.locations), "spec": rng.choice(self.specs),
                "prototype": rng.choice(self.prototypes)}


def fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: names[m.group(1)], value)
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    return value


class Picker:
    """Tool by its share, then one of its argument sets by weight, then the names filled in."""

    def __init__(self, tools: list[str], pools: Pools, seed: int) -> None:
        self.tools = sorted(t for t in tools if t not in NOT_LOADED)
        self.tool_weights = list(itertools.accumulate(TABLE[t][0] for t in self.tools))
        self.pools = pools
        self.rng = random.Random(seed)

    def __call__(self) -> tuple[str, Args]:
        tool = self.rng.choices(self.tools, cum_weights=self.tool_weights)[0]
        rows = TABLE[tool][1]
        args = self.rng.choices([a for _, a in rows], weights=[w for w, _ in rows])[0]
        return tool, fill(args, self.pools.draw(self.rng))


def outcome(status: int, content: bytes) -> tuple[str, str | None]:
    """'ok', the tool's error code, or what went wrong on the wire; and for a tool error the
    reason its details give (upstream_unavailable: busy, deadline, a transport error, ...), else
    the start of its message."""
    if status != 200:
        return f"http_{status}", None
    text = content.decode("utf-8", "replace")
    data = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
    try:
        msg = json.loads(data[-1] if data else text)
    except (ValueError, IndexError):
        return "unreadable", None
    if "error" in msg:
        return f"jsonrpc_{msg['error'].get('code')}", None
    result = msg.get("result") or {}
    if result.get("isError"):
        error = (result.get("structuredContent") or {}).get("error") or {}
        details = error.get("details") or {}
        code = str(error.get("code", "tool_error_unreadable"))
        if code == "rate_limited":  # the expected answer under this load: its waits would only split it
            return code, None
        reason = details.get("reason") or details.get("lastError") or details.get("cause") or error.get("message")
        return code, str(reason)[:80] if reason else None
    return "ok", None


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=dict)
    outcomes: dict[str, Counter] = field(default_factory=dict)
    reasons: Counter = field(default_factory=Counter)
    in_window: int = 0

    def add(self, tool: str, result: tuple[str, str | None], seconds: float, inside: bool) -> None:
        self.times.setdefault(tool, []).append(seconds)
        self.outcomes.setdefault(tool, Counter())[result[0]] += 1
        if result[0] != "ok":
            self.reasons[f"{result[0]}/{result[1] or '-'}"] += 1
        self.in_window += inside


async def _client(url: str, pick: Picker, stop: float, stats: Stats, call_timeout: float) -> None:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(call_timeout, connect=10)) as http:
        for rid in itertools.count(1):
            if time.perf_counter() >= stop:
                return
            tool, args = pick()
            body, headers = _body(tool, args, rid)
            t0 = time.perf_counter()
            try:
                resp = await http.post(url, content=json.dumps(body).encode(), headers=headers)
                result = outcome(resp.status_code, resp.content)
            except httpx.TimeoutException:
                result = ("timeout", None)
            except httpx.HTTPError as exc:
                result = (f"transport_{type(exc).__name__}", None)
            now = time.perf_counter()
            stats.add(tool, result, now - t0, now <= stop)


async def list_tools(url: str) -> list[str]:
    call, headers = _body("tools/list", {}, 1)  # a tools/call frame, turned into tools/list
    body = {**call, "method": "tools/list", "params": {"_meta": call["params"]["_meta"]}}
    headers = {k: v for k, v in headers.items() if k != "Mcp-Name"} | {"Mcp-Method": "tools/list"}
    async with httpx.AsyncClient(timeout=60) as http:
        resp = await http.post(url, json=body, headers=headers)
    text = resp.text
    data = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
    return [t["name"] for t in json.loads(data[-1] if data else text)["result"]["tools"]]


async def run_load(url: str, pools: Pools, *, clients: int, seconds: float, seed: int = 1,
                   call_timeout: float = 120.0) -> dict[str, Any]:
    """The load itself against a running service: the table checked against tools/list, then
    `clients` clients for `seconds`; calls still running at the end are awaited (at most
    call_timeout) and counted, but only answers inside the window count for calls/s."""
    tools = await list_tools(url)
    check_table(tools)
    stats = Stats()
    cpu0, t0 = time.process_time(), time.perf_counter()
    stop = t0 + seconds
    await asyncio.gather(*(_client(url, Picker(tools, pools, seed * 100_000 + i), stop, stats, call_timeout)
                           for i in range(clients)))
    wall = time.perf_counter() - t0
    per_tool = {}
    for tool in sorted(t for t in tools if t not in NOT_LOADED):
        times = stats.times.get(tool, [])
        per_tool[tool] = {"calls": len(times),
                          "p50_ms": round(statistics.median(times) * 1000, 1) if times else None,
                          "p99_ms": round(percentile(times, 0.99) * 1000, 1) if times else None,
                          "outcomes": dict(stats.outcomes.get(tool, Counter()).most_common())}
    everything = Counter[str]()
    for c in stats.outcomes.values():
        everything.update(c)
    bad = {k: v for k, v in everything.items() if k not in ("ok", "rate_limited")}
    all_times = [t for ts in stats.times.values() for t in ts]
    return {"clients": clients, "seconds": seconds, "calls": len(all_times),
            "calls_per_s": round(stats.in_window / seconds, 1),
            "p50_ms": round(statistics.median(all_times) * 1000, 1) if all_times else None,
            "p99_ms": round(percentile(all_times, 0.99) * 1000, 1) if all_times else None,
            "outcomes": dict(everything.most_common()), "errors_other_than_rate_limited": sum(bad.values()),
            "error_reasons": dict(stats.reasons.most_common()),
            "load_generator_cores": round((time.process_time() - cpu0) / wall, 2), "tools": per_tool}


# ---------------------------------------------------------------------------- the simulator's view
LIMITS = {"token": (2000, 8.0), "anonymous": (200, 2.0)}  # upstream_sim.ratelimit.Limits at scale 1
# The service's own budget at scale 1 is its defaults (eco.rate_limit: 10 % under the above).
BUDGET_ENV = {"ANONYMOUS_BURST": 180, "ANONYMOUS_RPS": 1.8, "TOKEN_BURST": 1800, "TOKEN_RPS": 7.2}


def _usage(recs: list[dict[str, Any]], seconds: float, token: str, scale: float) -> dict[str, Any]:
    api = [r for r in recs if not r["path"].startswith("/storage/") and r["headers"].get("x-api-token") in (None, token)]
    out: dict[str, Any] = {"seconds": round(seconds, 1)}
    for who, (burst, rate) in LIMITS.items():
        burst, rate = max(1, round(burst * scale)), rate * scale  # as upstream_sim.ratelimit.Limits.scaled
        mine = [r for r in api if ("x-api-token" in r["headers"]) == (who == "token")]
        allowed = burst + rate * seconds
        out[who] = {"requests": len(mine), "limit": round(allowed), "percent": round(100 * len(mine) / allowed, 1),
                    "answered_429": sum(1 for r in mine if r["status"] == 429)}
    out["by_route"] = dict(Counter(r["path"].removeprefix("/api/v0").split("/")[1] for r in api).most_common(12))
    return out


def simulator_usage(sim: str, token: str, *, lifetime_s: float, load_from: int, load_s: float,
                    scale: float = 1.0) -> dict[str, Any]:
    """Requests the simulator saw from the service per identity (its token, or anonymous: the
    one loopback IP) against what the simulator's buckets allow (full burst, then the refill
    rate), over the service's lifetime and over the load alone (the log's records from index
    `load_from` on, `load_s` seconds: the bucket is full when the load starts, so that is the
    most the simulator would have answered then); and its 429 answers. Requests with another
    token (the load generator's look-ups) and to signed storage URLs are left out."""
    recs = httpx.get(f"{sim}/_sim/requests", timeout=60).json()["requests"]
    return {"lifetime": _usage(recs, lifetime_s, token, scale), "load": _usage(recs[load_from:], load_s, token, scale)}


def _log_count(sim: str) -> int:
    return int(httpx.get(f"{sim}/_sim/requests", timeout=60).json()["count"])


# ---------------------------------------------------------------------------- processes
def _rss(proc: psutil.Process) -> float:
    try:
        return round(sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20, 1)
    except psutil.NoSuchProcess:
        return float("nan")


def memory(pid: int) -> dict[str, Any]:
    """RSS (MB, incl. children) of the served process and, under uvicorn --workers, of each worker."""
    top = psutil.Process(pid)
    # uvicorn --workers spawns its workers through multiprocessing (spawn_main); its resource
    # tracker is a child too but serves nothing. One worker: the process itself.
    workers = [p for p in top.children() if "spawn_main" in " ".join(p.cmdline())] or [top]
    return {"total_mb": _rss(top), "workers_mb": {str(p.pid): _rss(p) for p in workers}}


def _ready(base: str, seconds: float = 180.0, in_a_row: int = 3) -> None:
    """/readyz ready several times in a row: with two workers each may answer."""
    end, streak = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        try:
            streak = streak + 1 if httpx.get(f"{base}/readyz", timeout=5).json().get("status") == "ready" else 0
        except (httpx.HTTPError, ValueError):
            streak = 0
        if streak >= in_a_row:
            return
        time.sleep(0.3)
    raise RuntimeError(f"{base}/readyz never said ready")


def _fresh_postgres(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    if not re.fullmatch(r"[a-z_][a-z0-9_]*bench[a-z0-9_]*", name):
        raise SystemExit(f"--postgres database {name!r}: its name must contain 'bench' (it is dropped and recreated)")
    with psycopg.connect(parsed._replace(path="/postgres").geturl(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _fresh_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def warm_up(url: str, calls: int) -> None:
    """Sequential catalog calls, each on a new connection so every worker gets some, before the
    clients start: a worker's first catalog index is built by its first catalog call, and
    concurrent first calls meet the index race described in the docstring (--no-warm-up shows it)."""
    for _ in range(calls):
        body, headers = _body("eco_search_products", {"query": "soil temperature"}, 1)
        httpx.post(url, content=json.dumps(body).encode(), headers=headers, timeout=300)


def _log_errors(path: Path) -> list[str]:
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return [ln[:300] for ln in lines if "ERROR" in ln or "Traceback" in ln or "CRITICAL" in ln][:20]


def run_setup(setup: str, *, clients: int, seconds: float, postgres: str | None = None, redis_url: str | None = None,
              seed: int = 1, call_timeout: float = 120.0, warm_up_calls: int = 8,
              rate_limit_scale: float = 1.0) -> dict[str, Any]:
    """One setup end to end: simulator, service, load, the simulator's count, memory; torn down.
    `rate_limit_scale` multiplies the simulator's limits and the service's budget alike (1: NEON's
    limits and the service's defaults)."""
    from upstream_sim.tokens import issue_token

    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix=f"eco-bench-load-{setup}-") as data_dir:
        sim_port, port = _free_port(), _free_port()
        env = _env(data_dir, sim_port)
        token = issue_token(seed, exp_s=86400)
        env.update({"ECO_TOKEN": token, "ECO_MCP_SERVER__SHARE_CONFIG_TOKEN_OVER_HTTP": "true",
                    "ECO_MCP_SERVER__TRANSPORT": "http"})
        if rate_limit_scale != 1.0:
            env.update({f"ECO_MCP_ECO__RATE_LIMIT__{k}": str(max(1, round(v * rate_limit_scale)) if "BURST" in k
                                                              else v * rate_limit_scale)
                        for k, v in BUDGET_ENV.items()})
        sim = f"http://127.0.0.1:{sim_port}"
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "manage.py", "eco_sim", "--port", str(sim_port), "--storage-port", str(_free_port()),
                 "--seed", str(seed), "--rate-limit-scale", str(rate_limit_scale)], cwd=REPO, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_http(f"{sim}/_sim/faults")
            if setup == "two":
                assert postgres and redis_url, "two workers need --postgres and --redis"
                _fresh_postgres(postgres)
                _fresh_redis(redis_url)
                env.update({"DATABASE_URL": postgres, "REDIS_URL": redis_url,
                            "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(dir=data_dir)})
                cmd = [str(Path(sys.executable).parent / "uvicorn"), "eco_service.asgi:application", "--host",
                       "127.0.0.1", "--port", str(port), "--workers", "2", "--log-level", "warning"]
            else:
                cmd = [sys.executable, "manage.py", "eco_mcp", "--transport", "http", "--bind-address", "127.0.0.1",
                       "--bind-port", str(port), "--log-level", "warning"]
            log = Path(data_dir) / "service.log"
            started = time.monotonic()
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT))
            base = f"http://127.0.0.1:{port}"
            # While the service starts: a different token text is a different bucket.
            pools = Pools.from_simulator(f"{sim}/api/v0", issue_token(seed, exp_s=86401))
            try:
                _ready(base, in_a_row=3 if setup == "two" else 1)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}; service log:\n" + log.read_text(errors="replace")[-3000:]) from None
            warm_up(f"{base}/mcp", warm_up_calls)
            before = memory(procs[1].pid)
            cpu = _Cpu({"simulator": procs[0].pid, "service": procs[1].pid,
                        **{f"worker {pid}": int(pid) for pid in before["workers_mb"] if int(pid) != procs[1].pid}})
            cpu.start()
            load_from, load_t0 = _log_count(sim), time.monotonic()
            load = asyncio.run(run_load(f"{base}/mcp", pools, clients=clients, seconds=seconds, seed=seed,
                                        call_timeout=call_timeout))
            cores = cpu.stop()
            after = memory(procs[1].pid)
            usage = simulator_usage(sim, token, lifetime_s=time.monotonic() - started, load_from=load_from,
                                    load_s=time.monotonic() - load_t0, scale=rate_limit_scale)
            return {"setup": setup, **load, "simulator": usage, "memory_before": before, "memory_after": after,
                    "cores_busy": cores, "load_average": [round(x, 2) for x in os.getloadavg()],
                    "service_log_errors": _log_errors(log)}
        finally:
            for proc in reversed(procs):
                _stop(proc)


def table(report: dict[str, Any]) -> str:
    lines = [f"setup {report['setup']}: {report['clients']} clients, {report['seconds']:g} s, "
             f"{report['calls_per_s']} calls/s, {report['calls']} calls, p50 {report['p50_ms']} ms, "
             f"p99 {report['p99_ms']} ms, errors other than rate_limited: {report['errors_other_than_rate_limited']}",
             f"{'tool':31} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8}  outcomes"]
    lines.insert(1, f"outcomes {json.dumps(report['outcomes'])}; error reasons {json.dumps(report['error_reasons'])}")
    for tool, row in report["tools"].items():
        lines.append(f"{tool:31} {row['calls']:6d} {row['p50_ms'] or 0:8.1f} {row['p99_ms'] or 0:8.1f}  "
                     + ", ".join(f"{k} {v}" for k, v in row["outcomes"].items()))
    for span, sim in report["simulator"].items():
        for who in LIMITS:
            s = sim[who]
            lines.append(f"simulator, {span} ({sim['seconds']} s), {who}: {s['requests']} requests of {s['limit']} "
                         f"allowed = {s['percent']} % (goal <= {GOAL_PERCENT:g} %), 429s {s['answered_429']}")
    lines.append(f"simulator requests during the load by route: {json.dumps(report['simulator']['load']['by_route'])}")
    lines.append(f"memory before {json.dumps(report['memory_before'])} after {json.dumps(report['memory_after'])}")
    lines.append(f"cores busy {json.dumps(report['cores_busy'])}, load generator {report['load_generator_cores']}, "
                 f"load average {report['load_average']}")
    if report["service_log_errors"]:
        lines.append("service log: " + " | ".join(report["service_log_errors"][:5]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--setup", choices=["one", "two", "both"], default="both")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--call-timeout", type=float, default=120.0, help="seconds before a call counts as a hang")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate-limit-scale", type=float, default=1.0,
                        help="multiply the simulator's limits and the service's budget (1: NEON's)")
    parser.add_argument("--warm-up-calls", type=int, default=8,
                        help="sequential catalog calls before the clients start (0: start cold)")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/load_bench",
                        help="setup two: this database is dropped and created afresh (its name must contain 'bench')")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/1", help="setup two: this database is flushed")
    opts = parser.parse_args()
    # A terminated run still stops the simulator and the service it started (run_setup's finally).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (1 <= opts.clients <= 1000 and 0 < opts.seconds <= 600):
        parser.error("bounded run: 1-1000 clients, 0-600 seconds")
    reports = []
    for setup in (["one", "two"] if opts.setup == "both" else [opts.setup]):
        report = run_setup(setup, clients=opts.clients, seconds=opts.seconds, postgres=opts.postgres,
                           redis_url=opts.redis, seed=opts.seed, call_timeout=opts.call_timeout,
                           warm_up_calls=opts.warm_up_calls, rate_limit_scale=opts.rate_limit_scale)
        print(table(report), file=sys.stderr, flush=True)
        reports.append(report)
    print(json.dumps(reports, indent=2))
    for report in reports:
        print(table(report))


if __name__ == "__main__":
    main()
