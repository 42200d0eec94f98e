"""upstream_unavailable for a call past its deadline or refused for want of a free upstream slot
says which host it waited on, how to test it and which setting points the service elsewhere,
like the hint of a host that cannot be reached at all."""

from __future__ import annotations

import asyncio
from typing import Any

from eco_core.errors import EcoError
from upstream.context import call_scope
from upstream.mapping import host_of

HANG = {"hold_s": 120}
PRODUCT = "DP1.00001.001"


def _assert_names_host_and_remedies(err: Any, host: str) -> None:
    assert isinstance(err, EcoError), err
    assert err.code == "upstream_unavailable"
    assert err.hint is not None and host in err.hint, err.hint
    assert "--check" in err.hint and "eco.base_url" in err.hint and "ECO_MCP_ECO__BASE_URL" in err.hint


async def _within_deadline(coro_fn: Any, deadline_s: float) -> Any:
    with call_scope(deadline_s=deadline_s):
        try:
            return await coro_fn()
        except EcoError as exc:
            return exc


async def test_the_deadline_hint_names_the_upstream_host_and_suggests_check_and_base_url(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__READ_TIMEOUT_S="60")
    fresh_sim.faults.add("hang", route=r"^/api/v0/products/", **HANG)
    err = await _within_deadline(lambda: client.product(PRODUCT), 1.0)
    assert err.details["reason"] == "deadline"
    _assert_names_host_and_remedies(err, host_of(client.cfg.eco.base_url))


async def test_the_busy_slot_hint_names_the_upstream_host_and_suggests_check_and_base_url(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__MAX_CONCURRENCY="1", ECO_MCP_ECO__CONNECT_TIMEOUT_S="0.5",
                        ECO_MCP_ECO__READ_TIMEOUT_S="60")
    fault = fresh_sim.faults.add("hang", route=r"^/api/v0/products/", **HANG)
    hung = asyncio.create_task(_within_deadline(lambda: client.product(PRODUCT), 4.0))
    for _ in range(200):
        if fault.hits:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("the hung request never reached the simulator")

    err = await _within_deadline(lambda: client.site("HARV"), 4.0)
    assert err.details["reason"] == "busy"
    _assert_names_host_and_remedies(err, host_of(client.cfg.eco.base_url))
    await hung
