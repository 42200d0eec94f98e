"""eco_graphql bounds the work a query asks for before sending it (aliases with fragments expanded,
an estimate of the values in its answer) and the reply it reads: each refusal is query_too_large
with the numbers and what to ask instead, and a refused query never reaches the upstream."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.reliability.fuzzing import GRAPHQL_ALIASES, GRAPHQL_HUGE_ESTIMATE
from tests.tools.conftest import Outcome, error_of, sim_config
from upstream.graphql_window import QueryBounds, check_query

PRODUCTS_WITH_MONTHS = ("{ products { productCode productName productDescription keywords "
                        "siteCodes { siteCode availableMonths } } }")


def _graphql_requests(sim) -> int:
    return sim.requests.count("^/graphql")


async def _too_large(run_tool, sim, arguments) -> dict[str, Any]:
    before = _graphql_requests(sim)
    out = await run_tool("eco_graphql", arguments)
    err = error_of(out, "query_too_large", "query")
    assert out.requests == 0 and _graphql_requests(sim) == before
    assert err["details"]["field"] == "query" and err["hint"]
    return err


async def run_with(cfg: eco_config.EcoConfig, arguments: dict[str, Any]) -> Outcome:
    """eco_graphql through the real pipeline under `cfg` (other limits than the defaults)."""
    spec = default_registry().get("eco_graphql")
    assert spec is not None
    with eco_config.use_config(cfg):
        call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
        return Outcome(await execute(spec, arguments, call, token=None))


# -- before sending ---------------------------------------------------------------------------

async def test_four_hundred_aliases_of_products_are_refused_before_any_request(run_tool, sim):
    assert len(GRAPHQL_ALIASES) <= 8000  # within the length limit: the alias bound is what refuses it
    err = await _too_large(run_tool, sim, {"query": GRAPHQL_ALIASES})
    details = err["details"]
    assert details["aliases"] == 400 and details["maxAliases"] == 30
    assert "400 aliased fields" in err["message"] and "limits.graphql_max_aliases" in err["message"]
    assert "filterProducts" in err["hint"] and "eco_search_products" in err["hint"]


async def test_aliases_are_counted_through_fragments_each_time_they_are_spread(run_tool, sim):
    # 4 aliased roots, each spreading a fragment of 8 aliases: 4 + 4 * 8 = 36.
    code = sorted(sim.world.sites)[0]
    fragment = "fragment F on Site { " + " ".join(f"f{i}: siteName" for i in range(8)) + " }"
    query = "{ " + " ".join(f's{i}: site(siteCode: "{code}") {{ ...F }}' for i in range(4)) + " } " + fragment
    err = await _too_large(run_tool, sim, {"query": query})
    assert err["details"]["aliases"] == 36


async def test_a_query_at_the_alias_limit_is_sent(run_tool, sim):
    code = sorted(sim.world.sites)[0]
    query = "{ " + " ".join(f's{i}: site(siteCode: "{code}") {{ siteCode }}' for i in range(30)) + " }"
    out = await run_tool("eco_graphql", {"query": query})
    assert out.requests == 1 and out.ok["data"]["s29"] == {"siteCode": code}


async def test_a_query_whose_estimated_answer_is_too_large_is_refused_naming_its_largest_field(run_tool, sim):
    err = await _too_large(run_tool, sim, {"query": GRAPHQL_HUGE_ESTIMATE})
    details = err["details"]
    assert details["estimatedNodes"] > details["maxEstimatedNodes"] == 100_000
    assert details["largest"][0]["field"] == "sites" and details["aliases"] == 0
    assert "limits.graphql_max_estimated_nodes" in err["message"] and "sites ~" in err["message"]


async def test_naming_the_records_with_a_filter_brings_the_same_selection_within_bounds(run_tool, sim):
    selection = "{ productCode siteCodes { siteCode availableReleases { release availableMonths } } }"
    await _too_large(run_tool, sim, {"query": "{ products " + selection + " }"})
    codes = sorted(sim.world.products)[:2]
    query = f"{{ filterProducts(filter: {{productCodes: {json.dumps(codes)}}}) {selection} }}"
    out = await run_tool("eco_graphql", {"query": query})
    assert out.requests == 1 and out.ok["data"]["filterProducts"][0]["productCode"] == codes[0]
    # The codes may come as a variable too.
    query = "query($f: DataProductFilter!) { filterProducts(filter: $f) " + selection + " }"
    out = await run_tool("eco_graphql", {"query": query, "variables": {"f": {"productCodes": codes}}})
    assert out.requests == 1 and out.ok["data"]["filterProducts"][0]["productCode"] == codes[0]


async def test_the_bounds_come_from_the_configuration(sim_cfg, sim):
    cfg = sim_config(sim, limits__graphql_max_aliases=1, limits__graphql_max_estimated_nodes=200)
    code = sorted(sim.world.sites)[0]
    two = f'{{ a: site(siteCode: "{code}") {{ siteCode }} b: site(siteCode: "{code}") {{ siteCode }} }}'
    err = error_of(await run_with(cfg, {"query": two}), "query_too_large")
    assert err["details"]["aliases"] == 2 and err["details"]["maxAliases"] == 1
    err = error_of(await run_with(cfg, {"query": "{ sites { siteCode siteName siteType } }"}), "query_too_large")
    assert err["details"]["estimatedNodes"] == 1 + 81 * 3 and err["details"]["maxEstimatedNodes"] == 200


# Queries the tests, benchmarks, fuzzing vocabulary and fault matrix send as ordinary calls.
ORDINARY = [
    PRODUCTS_WITH_MONTHS,
    "{ products { productCode productName productDescription keywords } }",
    "{ products { productCode productName } }",
    '{ product(productCode: "DP1.00041.001") { productCode productName } }',
    '{ site(siteCode: "HARV") { siteCode siteName domainCode } }',
    "{ sites { siteCode siteName siteType stateCode domainCode siteLatitude siteLongitude } }",
    "{ __schema { types { name fields { name type { name kind } } } } }",
    '{ __type(name: "Site") { name kind fields { name } } }',
    '{ locationHierarchy(name: "HARV") { locationName locationChildHierarchy { locationName locationChildHierarchy {'
    ' locationName locationChildHierarchy { locationName locationChildHierarchy { locationName locationChildHierarchy'
    ' { locationName locationChildHierarchy { locationName } } } } } } } }',
    '{ findLocations(query: {locationNames: ["HARV", "BART"]}) { locationName locationProperties {'
    ' locationPropertyName locationPropertyValue } } }',
    "{ prototypeDatasets { uuid projectTitle keywords locations { siteCode } } }",
    '{ site(siteCode: "HARV") { siteCode dataProducts { dataProductCode availableMonths availableDataUrls } } }',
]


@pytest.mark.parametrize("query", ORDINARY)
def test_ordinary_queries_are_within_the_bounds(query):
    check_query(query, operation_name=None, max_chars=8000, max_depth=8, bounds=QueryBounds())


# -- the reply --------------------------------------------------------------------------------

async def test_a_reply_longer_than_the_read_bound_is_query_too_large_not_cut(sim_cfg, sim):
    # 2 x 1000 bytes may be read; the products' codes and names are ~17 KB.
    cfg = sim_config(sim, limits__graphql_hard_max_response_bytes=1000, limits__graphql_reply_read_factor=2)
    out = await run_with(cfg, {"query": "{ products { productCode productName } }"})
    err = error_of(out, "query_too_large", "query")
    assert err["details"]["maxReplyBytes"] == 2000 and err["details"]["replyBytesAtLeast"] > 2000
    assert "limits.graphql_reply_read_factor" in err["message"] and "eco_search_products" in err["hint"]
    assert out.requests == 1


@contextlib.asynccontextmanager
async def streamed_graphql(head: bytes, chunk: bytes, tail: bytes, total: int,
                           pause_s: float = 0.0) -> AsyncIterator[dict[str, Any]]:
    """A loopback GraphQL endpoint answering 200 with a chunked body (no content-length): `head`,
    `chunk` repeated to about `total` bytes (`pause_s` between chunks), `tail`; `sent` counts what
    it wrote before the client hung up."""
    state: dict[str, Any] = {"sent": 0, "url": ""}

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in request.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
        try:
            for part in (head, *[chunk] * (total // len(chunk)), tail):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                state["sent"] += len(part)
                await writer.drain()
                await asyncio.sleep(pause_s)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    state["url"] = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/graphql"
    try:
        yield state
    finally:
        server.close()
        await server.wait_closed()


@contextlib.contextmanager
def peak_rss() -> Iterator[dict[str, int]]:
    """The process's resident set sampled every 2 ms: `grew` is the peak above the start."""
    statm = Path("/proc/self/statm")
    read = lambda: int(statm.read_text().split()[1]) * 4096  # noqa: E731
    out = {"start": read(), "peak": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            out["peak"] = max(out["peak"], read())
            time.sleep(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        stop.set()
        thread.join()
        out["grew"] = max(0, out["peak"] - out["start"])


async def test_reading_a_streamed_reply_stops_at_the_bound_and_memory_stays_within_twice_it(sim_cfg, sim):
    # 64 MB of products without a content-length: the read stops at the bound (8 MB at the
    # defaults), the connection is dropped, and the process grows by less than twice the bound.
    item = json.dumps({"productCode": "DP1.00001.001", "productDescription": "x" * 400, "keywords": ["a"] * 40})
    chunk = ("," + item).encode() * 150
    total = 64 * 1024 * 1024
    async with streamed_graphql(b'{"data":{"products":[' + item.encode(), chunk, b"]}}", total) as upstream:
        cfg = eco_config.load_config(flags={"eco.base_url": sim.base_url, "eco.graphql_url": upstream["url"]},
                                     env={}, warn=False)
        bound = cfg.limits.graphql_reply_read_factor * cfg.limits.graphql_hard_max_response_bytes
        # Python's own allocations, traced: the process's RSS also carried what earlier tests in the
        # same worker left in the allocator's arenas (17.2 MB "grown" against a 16 MB bound once).
        tracemalloc.start()
        try:
            out = await run_with(cfg, {"query": "{ products { productCode productDescription keywords } }"})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        err = error_of(out, "query_too_large", "query")
        assert err["details"]["maxReplyBytes"] == bound == 8_000_000
        assert bound < err["details"]["replyBytesAtLeast"] <= bound + 2 * len(chunk)
        # What was written before the client hung up: the bound plus what the sockets buffer.
        assert upstream["sent"] < total // 2
    assert peak < 2 * bound, peak


async def test_a_reply_dribbled_past_the_call_deadline_ends_the_call_at_the_deadline(sim_cfg, sim):
    # Each chunk comes well within any read timeout, but the whole reply would take ~10 s.
    item = b'{"productCode":"DP1.00001.001"}'
    async with streamed_graphql(b'{"data":{"products":[' + item, b"," + item, b"]}}", 100 * (len(item) + 1),
                                pause_s=0.1) as upstream:
        cfg = eco_config.load_config(flags={"eco.base_url": sim.base_url, "eco.graphql_url": upstream["url"],
                                            "eco.call_deadline_s": 1.0}, env={}, warn=False)
        t0 = time.monotonic()
        out = await run_with(cfg, {"query": "{ products { productCode } }"})
        elapsed = time.monotonic() - t0
    err = error_of(out, "upstream_unavailable")
    assert err["details"]["reason"] == "deadline" and err["details"]["deadlineSeconds"] == 1.0
    assert elapsed < 5, elapsed
