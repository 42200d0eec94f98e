"""The query engine's settings: a query's time limit must fit inside the call's deadline (a system
check, eco.W003), a memory limit above the machine's is flagged (eco.W002), and the row cap of
eco_query_tables is the tool's own, not limits.max_limit (it pages nothing)."""

from __future__ import annotations

from eco_core.config import load_config
from eco_core.paging import cap_page_sizes
from eco_service.checks import check_tables
from families.tables.query import QueryTablesInput


def _ids(flags: dict) -> list[str]:
    return [m.id for m in check_tables(load_config(flags=flags, env={}, warn=False))]


def test_a_query_time_limit_not_below_the_call_deadline_is_flagged():
    assert _ids({}) == []
    assert _ids({"tables.query_timeout_s": 30, "eco.call_deadline_s": 30}) == ["eco.W003"]
    assert _ids({"tables.query_timeout_s": 29, "eco.call_deadline_s": 30}) == []


def test_a_memory_limit_above_the_machines_memory_is_flagged():
    assert _ids({"tables.query_memory_mb": 1 << 20}) == ["eco.W002"]


def test_the_row_cap_is_not_a_page_size():
    args = QueryTablesInput(dataset_id="x", sql="SELECT 1", limit=5000)
    assert cap_page_sizes(args, 20, default_limit=10).limit == 5000
    assert cap_page_sizes(QueryTablesInput(dataset_id="x", sql="SELECT 1"), 20, default_limit=10).limit == 100
