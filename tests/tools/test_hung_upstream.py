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
