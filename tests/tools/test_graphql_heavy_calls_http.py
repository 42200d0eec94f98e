"""Four heavy but allowed eco_graphql calls at once (each a 5 MB reply cut to the budget) leave
the HTTP server answering everyone else: /healthz and an eco_ping call, timed from another task
while they run, stay under 100 ms at p99 (a bounded stall, not a speed: a reply read and cut on
the event loop held every other caller for most of a second)."""

from __future__ import annotations

import asyncio
import gc
import json
import time

import httpx
from mcp import Client

from tests.gateway import wire
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config

QUERY = ("{ products { productCode productName productDescription keywords "
         "siteCodes { siteCode availableMonths } } }")
STALL_MS = 100.0
WAVES = 3


def products_reply(products: int = 200, sites: int = 36, months: int = 65) -> str:
    """What QUERY answers for NEON's catalog (~5 MB of compact JSON, as NEON sends it): every
    product at ~36 sites of ~65 months."""
    available = [f"{2013 + m // 12}-{m % 12 + 1:02d}" for m in range(months)]
    return json.dumps({"data": {"products": [
        {"productCode": f"DP1.{i:05d}.001", "productName": f"Product {i}", "productDescription": "d" * 250,
         "keywords": ["soil", "temperature"], "siteCodes": [{"siteCode": f"S{j:03d}", "availableMonths": available}
                                                            for j in range(sites)]}
        for i in range(products)]}}, separators=(",", ":"))


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def test_four_heavy_calls_at_once_leave_healthz_and_ping_answering(http_server, sim, active_config):  # noqa: F811
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    reply = products_reply()
    health: list[float] = []
    pings: list[float] = []
    answers: list[dict] = []
    try:
        with http_server(cfg) as srv:
            async with httpx.AsyncClient(base_url=srv.base) as web, Client(srv.url, mode="2026-07-28") as prober:
                # Warm: first uses import and build what later calls reuse (graphql-core, the schema).
                warm = await prober.call_tool("eco_graphql", {"query": '{ site(siteCode: "HARV") { siteCode } }'})
                assert not warm.is_error, warm.structured_content
                await prober.call_tool("eco_ping", {})
                # The simulator sends the reply as it is, doing no GraphQL work of its own meanwhile.
                sim.faults.add(kind="status", route=r"^/graphql", status=200, body=reply)
                done = asyncio.Event()

                async def probe() -> None:
                    while not done.is_set():
                        t0 = time.perf_counter()
                        assert (await web.get("/healthz")).status_code == 200
                        health.append((time.perf_counter() - t0) * 1000)
                        t0 = time.perf_counter()
                        assert not (await prober.call_tool("eco_ping", {})).is_error
                        pings.append((time.perf_counter() - t0) * 1000)
                        await asyncio.sleep(0.005)

                async def heavy(rid: int) -> None:
                    # Plain POSTs: the SDK client would check each 50 KB answer against the output
                    # schema on this event loop, which the probe shares.
                    body, headers = wire.modern_request("tools/call", {"name": "eco_graphql",
                                                                       "arguments": {"query": QUERY}}, rid=rid)
                    answer = wire.reply(await web.post("/mcp", json=body, headers=headers, timeout=60))["result"]
                    assert not answer.get("isError"), answer
                    answers.append(answer["structuredContent"])

                # A full collection owed by the setup (the simulator's world, the schema) would
                # otherwise land in the timed window whatever the calls do.
                gc.collect()
                # The same probes with no heavy call running: what this machine's load costs them
                # anyway, so the assertions below bound the stall the heavy calls add.
                probing = asyncio.create_task(probe())
                await asyncio.sleep(1.0)
                done.set()
                await probing
                quiet_health, quiet_pings = health[:], pings[:]
                health.clear()
                pings.clear()
                done.clear()
                probing = asyncio.create_task(probe())
                try:
                    # Rounds of four at once, enough of them for a p99 that is not just the worst sample.
                    for wave in range(WAVES):
                        await asyncio.gather(*(heavy(4 * wave + i) for i in range(4)))
                finally:
                    done.set()
                    await probing
    finally:
        sim.faults.clear()
    sent = len(json.dumps({**json.loads(reply), "errors": None}, separators=(",", ":")))
    assert len(answers) == 4 * WAVES
    for body in answers:
        assert body["truncated"] and body["truncatedPaths"][0] == "$.products" and body["bytesTotal"] == sent
    assert health and p99(health) < p99(quiet_health) + STALL_MS, (len(health), sorted(health)[-5:])
    assert pings and p99(pings) < p99(quiet_pings) + STALL_MS, (len(pings), sorted(pings)[-5:], p99(quiet_pings))
    assert len(pings) >= 20, "the heavy calls ended before the probe could time enough"
