"""`limits.default_limit` is the page size of a call that sends no `limit`, on every tool whose spec
default is the service's 50; tools with a default of their own keep it, and `limits.max_limit`
still caps whatever default applies. Calls go through the gateway's real pipeline against the
simulator's catalog (tests/tools/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from eco_core.config import Limits
from eco_core.paging import cap_page_sizes, follows_default_limit
from mcp_gateway.calls import execute
from mcp_gateway.context import CallContext
from mcp_gateway.registry import default_registry
from tests.catalog.conftest import catalog_module  # noqa: F401  (fixture: the simulated catalog, built once)
from tests.tools.conftest import Outcome, sim_cfg, sim_config  # noqa: F401  (fixture: that catalog warm)

# The spec's tools whose `limit` defaults to 50 (observatory-mcp-spec.md, Endpoints): their page
# size is the service default. Every other tool's `limit` default is its own (25, 100, 20).
SPEC_DEFAULT_IS_SERVICE_DEFAULT = {"eco_search_sites", "eco_find_locations", "eco_list_files", "eco_list_sample_classes"}
# mcp_gateway/tools/locations.py is another engineer's file: its `limit` line gets the marker there.
PENDING = {"eco_find_locations"}


async def _call(sim: Any, name: str, arguments: dict[str, Any], **limits: int) -> Outcome:
    cfg = sim_config(sim, **{f"limits__{k}": v for k, v in limits.items()})
    spec = default_registry().get(name)
    assert spec is not None, name
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
    return Outcome(await execute(spec, arguments, call, token=None))


async def test_a_call_without_limit_gets_default_limit_items_and_a_next_offset_after_them(sim_cfg, sim):  # noqa: F811
    body = (await _call(sim, "eco_search_sites", {}, default_limit=7)).ok
    assert len(body["items"]) == 7
    assert body["page"]["limit"] == 7 and body["page"]["nextOffset"] == 7
    assert body["page"]["total"] == len(sim.world.sites) > 7


async def test_a_callers_explicit_limit_wins_over_default_limit(sim_cfg, sim):  # noqa: F811
    body = (await _call(sim, "eco_search_sites", {"limit": 12}, default_limit=7)).ok
    assert len(body["items"]) == 12 and body["page"]["limit"] == 12


async def test_a_tool_with_its_own_default_keeps_it_whatever_default_limit_says(sim_cfg, sim):  # noqa: F811
    body = (await _call(sim, "eco_search_products", {"status": "ALL"}, default_limit=7)).ok
    assert body["page"]["total"] > 25  # so that 25 items are the default at work, not the catalog's end
    assert len(body["items"]) == 25 and body["page"]["limit"] == 25


async def test_max_limit_lowers_a_default_limit_above_it_and_refuses_a_sent_limit_above_it(sim_cfg, sim):  # noqa: F811
    body = (await _call(sim, "eco_search_sites", {}, default_limit=30, max_limit=5)).ok
    assert len(body["items"]) == 5 and body["page"]["limit"] == 5
    error = (await _call(sim, "eco_search_sites", {"limit": 6}, default_limit=30, max_limit=5)).error
    assert error["code"] == "invalid_argument" and error["details"] == {
        "field": "limit", "maximum": 5, "setting": "limits.max_limit"}


def test_default_limit_above_a_tools_own_maximum_is_lowered_to_that_maximum():
    spec = default_registry().get("eco_search_sites")
    assert spec is not None
    args = cap_page_sizes(spec.input_model.model_validate({}), 500, default_limit=300)
    assert args.limit == 100  # eco_search_sites takes at most 100


def _limit_tools() -> list[Any]:
    registry = default_registry()
    specs = [registry.get(n) for n in registry.names()]
    return [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason="marker pending in locations.py"))
        if s.name in PENDING else s
        for s in specs if s is not None and "limit" in s.input_model.model_fields
    ]


@pytest.mark.parametrize("spec", _limit_tools(), ids=lambda s: s.name)
def test_exactly_the_tools_whose_spec_default_is_50_follow_default_limit_and_publish_its_default(spec):
    field = spec.input_model.model_fields["limit"]
    follows = spec.name in SPEC_DEFAULT_IS_SERVICE_DEFAULT
    assert follows_default_limit(field) is follows
    published = spec.tool.input_schema["properties"]["limit"]["default"]
    if follows:
        # tools/list is rendered from the declarations, not the configuration: it shows the
        # setting's own default, which is the spec's.
        assert published == field.default == Limits.model_fields["default_limit"].default
    else:
        assert published != Limits.model_fields["default_limit"].default
