"""Through the gateway's real pipeline: while upstream calls hang, a tool call
that needs the upstream ends with upstream_unavailable (busy, or at its deadline) and a
catalog-served call answers normally. Small configured values keep it to a few seconds."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.tools.conftest import Outcome, sim_config
from upstream.client import close_clients


@pytest.fixture
async def tight_cfg(sim, catalog_module, db):
    sim.reset()
    cfg = sim_config(sim, eco__max_concurrency=1, eco__connect_timeout_s=0.5, eco__call_deadline_s=3.0,
                     eco__read_timeout_s=60.0)
    with eco_config.use_config(cfg):
        yield cfg
        sim.reset()  # releases the held requests
        await close_clients()
        await sync_to_async(connections.close_all)()


async def _run(cfg, name: str, arguments: dict) -> Outcome:
    spec = default_registry().get(name)
    assert spec is not None
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
    return Outcome(await execute(spec, arguments, call, token=None))


async def test_while_an_upstream_call_hangs_catalog_calls_answer_and_upstream_calls_end_bounded(tight_cfg, sim):
    fault = sim.faults.add("hang", route=r"^/api/v0/products/", hold_s=120)
    hung = asyncio.create_task(_run(tight_cfg, "eco_get_product",
                                    {"product": "DP1.00041.001", "include": ["abstract"]}))
    for _ in range(200):
        if fault.hits:
            break
        await asyncio.sleep(0.02)
    assert fault.hits, "the upstream-bound call reached the hung route"

    search = await _run(tight_cfg, "eco_search_products", {"query": "soil temperature"})
    record = await _run(tight_cfg, "eco_get_product", {"product": "DP1.00041.001"})
    busy = await _run(tight_cfg, "eco_get_site", {"site": "HARV", "include": ["location"]})

    assert search.ok["items"] and search.requests == 0
    assert record.ok["productCode"] == "DP1.00041.001" and record.requests == 0
    err = busy.error
    assert err["code"] == "upstream_unavailable" and err["retryable"] is True
    assert err["details"]["reason"] == "busy"
    assert not hung.done(), "all of that happened while the hung call still held the only slot"

    ended = await hung
    err = ended.error
    assert err["code"] == "upstream_unavailable" and err["retryable"] is True
    assert err["details"]["reason"] == "deadline" and err["details"]["deadlineSeconds"] == 3.0
    assert ended.requests == 1


@pytest.fixture
async def fallback_cfg(sim, catalog_module, db):
    sim.reset()
    cfg = sim_config(sim, eco__call_deadline_s=20.0, eco__fallback_wait_s=1.0, eco__read_timeout_s=60.0)
    with eco_config.use_config(cfg):
        yield cfg
        sim.reset()
        await close_clients()
        await sync_to_async(connections.close_all)()


async def test_a_hung_live_read_the_catalog_can_answer_gives_way_after_fallback_wait_not_the_call_deadline(
        fallback_cfg, sim):
    sim.faults.add("hang", route=r"^/api/v0/sites/HARV", hold_s=120)
    sim.faults.add("hang", route=r"^/api/v0/locations/sites", hold_s=120)

    site = await _run(fallback_cfg, "eco_get_site", {"site": "HARV"})
    found = await _run(fallback_cfg, "eco_search_sites", {"query": "harv", "include_elevation": True})

    # Answered from the catalog, and the note names the wait that ended the live read (not the
    # call's 20 s deadline, which would read as a failure of the upstream).
    assert site.ok["siteCode"] == "HARV" and site.ok["source"]["origin"] == "catalog" and site.ok["productCount"] > 0
    assert any("GET /sites/HARV was not answered within 1 s (eco.fallback_wait_s)" in n for n in site.ok["notes"])
    [item] = found.ok["items"]
    assert item["siteCode"] == "HARV" and item["elevation"] is not None
    assert any("GET /locations/sites was not answered within 1 s (eco.fallback_wait_s)" in n for n in found.ok["notes"])
    assert site.requests == 1 and found.requests == 1

    # The shortened wait was the read's alone: an upstream call the catalog cannot answer still has
    # the call's whole deadline (the location section of the same site answers after the hang is gone).
    sim.faults.clear()
    whole = await _run(fallback_cfg, "eco_get_site", {"site": "HARV", "include": ["location"]})
    assert whole.ok["source"]["origin"] == "upstream" and whole.ok["location"] is not None


async def test_when_the_call_deadline_comes_before_the_fallback_wait_the_note_names_the_deadline(sim, catalog_module, db):
    sim.reset()
    cfg = sim_config(sim, eco__call_deadline_s=1.0, eco__fallback_wait_s=10.0, eco__read_timeout_s=60.0)
    with eco_config.use_config(cfg):
        try:
            sim.faults.add("hang", route=r"^/api/v0/sites/HARV", hold_s=120)
            site = await _run(cfg, "eco_get_site", {"site": "HARV"})
        finally:
            sim.reset()
            await close_clients()
            await sync_to_async(connections.close_all)()
    assert site.ok["source"]["origin"] == "catalog"
    assert any("GET /sites/HARV was not answered within 1 s (eco.call_deadline_s)" in n for n in site.ok["notes"])
