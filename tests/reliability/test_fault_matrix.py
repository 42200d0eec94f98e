"""Every upstream-backed tool under every fault kind, through the gateway's
real pipeline in process, against a simulator of this module's own: each case gets the spec's
answer for its fault (tests/reliability/fault_matrix.py says which) and never internal_error or
a hang, and the call after the fault clears is answered. Each case runs on a configuration of
its own, so its upstream cache starts cold and no warm answer masks the fault; the stale path is
tested on purpose, with warm answers past their TTL."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from eco_core.memo import memos
from mcp_gateway.registry import default_registry
from tests.catalog.conftest import catalog_module  # noqa: F401  (fixture)
from tests.reliability.fault_matrix import (
    DOCUMENT,
    FAULTS,
    NO_UPSTREAM,
    PRODUCT,
    REDIRECT_PATH,
    ROWS,
    Case,
    Expect,
    RestartableSim,
    check,
    expected,
    expected_for,
    fault_hits,
    recovered,
)
from upstream.client import close_clients


@pytest.fixture(scope="module")
def sim() -> Any:
    """This module's simulator (it replaces the session's here, so the catalog is built from it
    too): the restart test kills it and starts another on the same ports."""
    own = RestartableSim().restart()
    yield own
    own.kill()


@pytest.fixture
async def case(sim, catalog_module, db, tmp_path: Path) -> AsyncIterator[Case]:  # noqa: F811
    sim.faults.clear()
    memos.drop_all()  # eco_find_locations remembers coordinates per process: start from none
    with contextlib.ExitStack() as stack:
        yield Case(sim, tmp_path, stack)
        if sim.current is None:
            sim.restart()
        sim.faults.clear()
        await close_clients()
    await sync_to_async(connections.close_all)()


def test_every_registered_tool_has_exactly_one_fault_matrix_entry():
    registered = set(default_registry().names())
    both = set(ROWS) & set(NO_UPSTREAM)
    assert not both, f"in both the upstream rows and the no-upstream list: {sorted(both)}"
    missing = registered - set(ROWS) - set(NO_UPSTREAM)
    assert not missing, f"give these tools a row in tests/reliability/fault_matrix.py: {sorted(missing)}"
    assert set(ROWS) | set(NO_UPSTREAM) <= registered, "the matrix names tools that are not registered"


@pytest.mark.parametrize("kind", sorted(FAULTS))
@pytest.mark.parametrize("tool", sorted(ROWS))
async def test_tool_gives_the_spec_answer_under_the_fault_and_recovers_when_it_clears(tool, kind, sim, case):
    row, fault = ROWS[tool], FAULTS[kind]
    case.configure(token=row.token, timeout_case=kind == "timeout")
    injected = fault.add(sim, row)

    check(await case.run(tool), expected_for(row, fault))
    assert injected.hits == fault_hits(row, fault), f"the fault answered {injected.hits} requests"
    if kind == "foreign_redirect":
        assert sim.requests.count(REDIRECT_PATH) == 0, "the foreign redirect was followed"

    sim.faults.clear()
    after = await case.run(tool)
    recovered(after, row)
    assert after.meta["staleServed"] is False


async def test_every_tool_answers_upstream_unavailable_while_the_simulator_is_down_and_again_once_it_restarts(
        sim, case):
    # One configuration for every tool, used on both sides of the restart: what the failed calls
    # left behind (cache, breaker, pooled connections) is what the calls after the restart meet.
    case.configure(token=True)
    sim.kill()
    down = {tool: await case.run(tool) for tool in sorted(ROWS)}
    sim.restart()
    up = {tool: await case.run(tool) for tool in sorted(ROWS)}
    for tool, row in sorted(ROWS.items()):
        check(down[tool], expected(row, "upstream_unavailable", {"cause": "ConnectError"}))
        recovered(up[tool], row)


@pytest.mark.parametrize("tool", sorted(NO_UPSTREAM))
async def test_catalog_only_tool_answers_without_the_upstream_while_every_route_fails(tool, sim, case):
    case.configure()
    sim.faults.add("status", route=".", status=503)
    sim.requests.clear()
    out = await case.run(tool)
    assert (out.ok.get("items") or out.ok.get("rows") or out.ok.get("points")) and out.requests == 0 \
        and sim.requests.count() == 0
    check(out, Expect())


# Cached rows whose TTL is also a catalog's (releases, locations) are left out: a 1 s TTL would
# make those catalogs due for a refresh in the background of every call.
STALE_ROWS = sorted(t for t, r in ROWS.items() if r.cached and r.cached not in ("releases", "locations"))


async def test_warm_answers_past_their_ttl_are_served_marked_stale_while_the_upstream_fails(sim, case):
    case.configure(token=True, cache__refresh_ahead=0,
                   **{f"cache__ttl_s__{ROWS[t].cached}": 1 for t in STALE_ROWS})
    for tool in STALE_ROWS:
        assert (await case.run(tool)).ok
    await asyncio.sleep(1.1)  # every warm entry is now past its 1 s TTL
    sim.faults.add("status", route=".", status=503)
    stale = {tool: await case.run(tool) for tool in STALE_ROWS}
    sim.faults.clear()
    fresh = {tool: await case.run(tool) for tool in STALE_ROWS}
    for tool in STALE_ROWS:
        body = stale[tool].ok
        assert body["source"]["stale"] is True and stale[tool].meta["staleServed"] is True, (tool, body["source"])
        assert "Upstream failed; a stale cached answer was served." in body["notes"], (tool, body["notes"])
        recovered(fresh[tool], ROWS[tool])


async def test_a_retry_after_beyond_max_wait_is_rate_limited_at_once_and_honoured_until_it_passes(sim, case):
    case.configure()
    row = ROWS["eco_get_product"]
    injected = sim.faults.add("rate_limit", route=row.route, count=1, retry_after=2)
    check(await case.run("eco_get_product"), Expect(code="rate_limited", details={"retryAfterSeconds": 2}))
    assert injected.hits == 1, "waiting longer than eco.rate_limit.max_wait_s is not retried"
    held = await case.run("eco_get_product")
    check(held, Expect(code="rate_limited"))
    assert held.requests == 0, "the upstream's Retry-After is honoured without asking it again"
    await asyncio.sleep(2.0)
    recovered(await case.run("eco_get_product"), row)


async def test_a_document_answered_in_json_is_upstream_error_and_is_not_cached_as_the_document(sim, case):
    # Regression: the JSON reply was cached as the document's text ("Not a PDF") for a day.
    case.configure()
    sim.faults.add("malformed", route=ROWS["eco_get_document"].route, count=1)
    check(await case.run("eco_get_document"), Expect(code="upstream_error", details={"reason": "unexpected_body"}))
    body = (await case.run("eco_get_document")).ok
    assert body["text"] and body["contentType"] == "application/pdf" and not body["notes"], body


async def test_a_document_download_answered_in_json_writes_no_file_and_the_next_call_saves_the_pdf(
        sim, case, tmp_path):
    # Regression: the JSON reply was saved as the document, and the next call skipped it as
    # identical to the (cached) metadata it had been announced with.
    case.configure(token=True)
    sim.faults.add("malformed", route=ROWS["eco_download_files"].route)
    check(await case.run("eco_download_files"), Expect(code="upstream_error", details={"reason": "unexpected_body"}))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    sim.faults.clear()
    (saved,) = (await case.run("eco_download_files")).ok["files"]
    assert saved["status"] == "downloaded", saved
    content = (tmp_path / saved["path"]).read_bytes()
    spec = next(s for s in sim.world.products[PRODUCT]["specs"] if s["specNumber"] == DOCUMENT)
    assert content.startswith(b"%PDF-") and len(content) == spec["specSize"]
