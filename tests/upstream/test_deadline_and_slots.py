"""A hung upstream cannot stall the process: one call's upstream time ends at
its call-scope deadline, and waiting for one of the `eco.max_concurrency` slots is bounded.

The simulator's `hang` fault holds requests for real; backoff and rate-limit waits use the fake
clock of `sim_client`, so only the hung requests and the bounded waits take real time (small
configured values keep each test to a few seconds). Assertions are about which code a call ends
with and that it ends before the hung request would have, never about how fast anything is."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from eco_core.errors import EcoError
from upstream.context import call_scope

HANG = {"hold_s": 120}
PRODUCT = "DP1.00001.001"


async def _until_hit(fault: Any) -> None:
    """Until the simulator holds the hung request (so it occupies its slot)."""
    for _ in range(200):
        if fault.hits:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the hung request never reached the simulator")


async def _within_deadline(coro_fn: Any, deadline_s: float) -> Any:
    with call_scope(deadline_s=deadline_s) as acct:
        try:
            return await coro_fn(), acct
        except EcoError as exc:
            return exc, acct


async def test_a_hung_request_ends_at_the_call_deadline_with_retryable_upstream_unavailable(sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__READ_TIMEOUT_S="60")
    fresh_sim.faults.add("hang", route=r"^/api/v0/products/", **HANG)
    started = time.monotonic()
    err, acct = await _within_deadline(lambda: client.product(PRODUCT), 1.0)
    elapsed = time.monotonic() - started
    assert isinstance(err, EcoError), err
    assert err.code == "upstream_unavailable" and err.retryable
    assert err.details["reason"] == "deadline" and err.details["deadlineSeconds"] == 1.0
    assert "deadline" in err.message and "/products/{productCode}" in err.message
    # Ended by the deadline, not by the 60 s read timeout (three of them, with retries).
    assert elapsed < 60
    assert acct.requests == 1, "the attempt cut off by the deadline still counts"


async def test_with_every_slot_held_by_a_hung_call_another_call_is_refused_after_the_bounded_wait(
        sim_client, fresh_sim):
    client = sim_client(ECO_MCP_ECO__MAX_CONCURRENCY="1", ECO_MCP_ECO__CONNECT_TIMEOUT_S="0.5",
                        ECO_MCP_ECO__READ_TIMEOUT_S="60")
    fault = fresh_sim.faults.add("hang", route=r"^/api/v0/products/", **HANG)
    hung = asyncio.create_task(_within_deadline(lambda: client.product(PRODUCT), 6.0))
    await _until_hit(fault)

    err, acct = await _within_deadline(lambda: client.site("HARV"), 6.0)

    assert isinstance(err, EcoError), err
    assert err.code == "upstream_unavailable" and err.retryable
    assert err.details["reason"] == "busy" and err.details["retryAfterSeconds"] >= 1
    assert "busy" in err.message and "/sites/{siteCode}" in err.message
    assert acct.requests == 0, "nothing was sent for the refused call"
    assert not hung.done(), "refused while the hung call still held the only slot"

    hung_err, _ = await hung
    assert isinstance(hung_err, EcoError) and hung_err.details["reason"] == "deadline"
    # The hung call gave its slot back when its deadline ended it: a healthy call now goes through.
    site, acct = await _within_deadline(lambda: client.site("HARV"), 6.0)
    assert not isinstance(site, EcoError), site
    assert site.site_code == "HARV" and acct.requests == 1


async def test_a_slow_answer_within_the_deadline_is_served_and_one_past_it_is_cut_off(sim_client, fresh_sim):
    client = sim_client()
    fresh_sim.faults.add("latency", route=r"^/api/v0/sites/", delay_s=1.0)
    site, _ = await _within_deadline(lambda: client.site("HARV"), 10.0)
    assert not isinstance(site, EcoError), site

    fresh_sim.faults.add("latency", route=r"^/api/v0/products/", delay_s=5.0)
    err, _ = await _within_deadline(lambda: client.product(PRODUCT), 0.5)
    assert isinstance(err, EcoError) and err.code == "upstream_unavailable"
    assert err.details["reason"] == "deadline"


async def test_without_a_call_deadline_a_request_runs_to_its_own_timeout(sim_client, fresh_sim):
    """Catalog refreshes run in a scope without a deadline: a slow catalog answer is awaited."""
    client = sim_client()
    fresh_sim.faults.add("latency", route=r"^/api/v0/sites$", delay_s=1.5)
    with call_scope() as acct:
        sites = await client.sites()
    assert sites and acct.requests == 1


async def test_backoff_that_would_outlast_the_deadline_is_skipped_and_the_real_failure_answered(
        sim_client, fresh_sim, clock):
    """With no time left for another attempt the caller gets the upstream's own failure now,
    instead of sleeping into the deadline first."""
    client = sim_client(ECO_MCP_ECO__RETRIES__BACKOFF_BASE_S="30", ECO_MCP_ECO__RETRIES__BACKOFF_MAX_S="30")
    fresh_sim.faults.add("status", route=r"^/api/v0/sites/", status=503)
    err, acct = await _within_deadline(lambda: client.site("HARV"), 5.0)
    assert isinstance(err, EcoError) and err.code == "upstream_error"
    assert err.details["upstreamStatus"] == 503
    assert acct.requests == 1
    assert clock.sleeps == [], "no backoff was slept"


@pytest.mark.parametrize("fault", [{"kind": "status", "status": 503}, {"kind": "reset"}])
async def test_upstream_requests_count_every_attempt_answered_or_not(sim_client, fresh_sim, fault):
    client = sim_client()
    fresh_sim.faults.add(route=r"^/api/v0/sites/", **fault)
    with call_scope() as acct:
        with pytest.raises(EcoError) as caught:
            await client.site("HARV")
    assert caught.value.code in {"upstream_error", "upstream_unavailable"}
    assert acct.requests == 3, "three attempts (the default eco.retries.max_attempts), all counted"
    assert acct.endpoints == ["GET /sites/{siteCode}"] * 3


def test_a_shorter_wait_tightens_the_call_deadline_only_inside_it_and_never_lengthens_it():
    from upstream.context import current, waiting_at_most

    with waiting_at_most(1.0):
        assert current() is None  # outside a call there is no deadline to tighten
    with call_scope(deadline_s=5.0) as acct:
        at = acct.deadline_at
        with waiting_at_most(60.0):
            assert (acct.deadline_s, acct.deadline_at) == (5.0, at)
        with waiting_at_most(1.0):
            assert acct.deadline_s == 1.0 and acct.deadline_at is not None and at is not None
            assert acct.deadline_at < at and acct.remaining() <= 1.0
        assert (acct.deadline_s, acct.deadline_at) == (5.0, at)
