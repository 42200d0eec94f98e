"""A subset of the fault matrix (one tool per fault kind) through the SDK's real MCP client over
HTTP against the real server, with this module's own simulator behind it: the same expectations
as in process (tests/reliability/fault_matrix.py), now after the transport, and every answer
checked against the outputSchema from tools/list.

The subset uses tools that need no catalog, so this module builds none. Each case installs a
configuration of its own as the active one, which the server thread's upstream client reads: its
cache starts cold, so no earlier case's answer masks the fault."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from mcp_gateway.http_app import build_app
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import RunningServer, run_http
from tests.reliability.fault_matrix import (
    FAULTS,
    REDIRECT_PATH,
    ROWS,
    RestartableSim,
    check,
    expected,
    expected_for,
    fault_hits,
    matrix_config,
    recovered,
)
from tests.tools.conftest import Outcome

# One tool per fault kind ("restart": the simulator killed, then a new one on its ports).
SUBSET = {
    "5xx_burst": "eco_search_taxonomy",
    "5xx_persistent": "eco_list_sample_classes",
    "reset": "eco_get_prototype_dataset",
    "timeout": "eco_search_prototype_datasets",
    "malformed_json": "eco_get_document",
    "429_retry_after": "eco_graphql",
    "429_no_retry_after": "eco_search_taxonomy",
    "429_storm": "eco_ping",
    "graphql_outage": "eco_graphql",
    "foreign_redirect": "eco_list_sample_classes",
    "restart": "eco_get_prototype_dataset",
}


@pytest.fixture(scope="module")
def sim() -> Iterator[RestartableSim]:
    own = RestartableSim().restart()
    yield own
    own.kill()


@pytest.fixture(scope="module")
def server(sim, django_db_setup, tmp_path_factory) -> Iterator[RunningServer]:
    cfg = matrix_config(sim, tmp_path_factory.mktemp("http-downloads"), server__transport="http")
    with run_http(build_app(cfg=cfg)) as srv:
        yield srv


def test_the_subset_covers_every_fault_kind_with_a_tool_of_the_matrix():
    assert set(SUBSET) == {*FAULTS, "restart"}
    assert set(SUBSET.values()) <= set(ROWS)


@pytest.mark.parametrize(("kind", "tool"), sorted(SUBSET.items()))
async def test_over_http_the_tool_gives_the_spec_answer_under_the_fault_and_recovers(
        kind, tool, sim, server, db, active_config, tmp_path):
    row = ROWS[tool]
    active_config(matrix_config(sim, tmp_path, server__transport="http", timeout_case=kind == "timeout"))
    sim.faults.clear()
    try:
        async with Client(server.url, mode="2026-07-28") as client:
            listed: dict[str, Any] = {t.name: t for t in (await client.list_tools()).tools}
            if kind == "restart":
                sim.kill()
                check(Outcome(await client.call_tool(tool, row.arguments)),
                      expected(row, "upstream_unavailable", {"cause": "ConnectError"}))
                sim.restart()
            else:
                fault = FAULTS[kind]
                injected = fault.add(sim, row)
                during = await client.call_tool(tool, row.arguments)
                check(Outcome(during), expected_for(row, fault))
                if not during.is_error:
                    assert_valid_tool_result(listed[tool], during)
                assert injected.hits == fault_hits(row, fault), f"the fault answered {injected.hits} requests"
                assert sim.requests.count(REDIRECT_PATH) == 0
                sim.faults.clear()
            after = await client.call_tool(tool, row.arguments)
            assert_valid_tool_result(listed[tool], after)
            recovered(Outcome(after), row)
    finally:
        if sim.current is None:
            sim.restart()
        sim.faults.clear()
