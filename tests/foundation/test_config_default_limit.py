"""`limits.default_limit` is the page size of a call that sends no `limit`, on every tool whose spec
default is the service's 50; tools with a default of their own keep it, and `limits.max_limit`
still caps whatever default applies. Calls go through the gateway's real pipeline against the
simulator; the tools used read the upstream only, so no catalog is built for them."""

from __future__ import annotations

from typing import Any

import pytest

from eco_core.config import Limits
from eco_core.paging import cap_page_sizes, follows_default_limit
from mcp_gateway.registry import default_registry
from tests.tools.conftest import Outcome, sim_config
from tests.tools.sample_support import run
from upstream.client import close_clients
from upstream_sim import refdata

# The spec's tools whose `limit` defaults to 50 (observatory-mcp-spec.md, Endpoints): their page
# size is the service default. Every other tool's `limit` default is its own (25, 100, 20).
SPEC_DEFAULT_IS_SERVICE_DEFAULT = {"eco_search_sites", "eco_find_locations", "eco_list_files", "eco_list_sample_classes"}
CLASSES = len(refdata.supported_classes())


@pytest.fixture
async def call(sim, active_config):
    """Run a tool against the simulator under `limits.*` of the test's choosing."""
    sim.faults.clear()

    async def call(name: str, arguments: dict[str, Any], **limits: int) -> Outcome:
        cfg = active_config(sim_config(sim, **{f"limits__{k}": v for k, v in limits.items()}))
        return await run(cfg, name, arguments)

    yield call
    await close_clients()


async def test_a_call_without_limit_gets_default_limit_items_and_a_next_offset_after_them(call):
    body = (await call("eco_list_sample_classes", {}, default_limit=3)).ok
    assert CLASSES > 3
    assert len(body["items"]) == 3
    assert body["page"]["limit"] == 3 and body["page"]["nextOffset"] == 3 and body["page"]["total"] == CLASSES


async def test_a_callers_explicit_limit_wins_over_default_limit(call):
    body = (await call("eco_list_sample_classes", {"limit": 5}, default_limit=3)).ok
    assert len(body["items"]) == 5 and body["page"]["limit"] == 5


async def test_a_tool_with_its_own_default_keeps_it_whatever_default_limit_says(call):
    body = (await call("eco_search_taxonomy", {"taxon_type_code": "TICK"}, default_limit=3)).ok
    assert body["page"]["total"] > 25  # so that 25 items are the default at work, not the list's end
    assert len(body["items"]) == 25 and body["page"]["limit"] == 25


async def test_max_limit_lowers_a_default_limit_above_it_and_refuses_a_sent_limit_above_it(call):
    body = (await call("eco_list_sample_classes", {}, default_limit=30, max_limit=2)).ok
    assert len(body["items"]) == 2 and body["page"]["limit"] == 2
    error = (await call("eco_list_sample_classes", {"limit": 3}, default_limit=30, max_limit=2)).error
    assert error["code"] == "invalid_argument" and error["details"] == {
        "field": "limit", "maximum": 2, "setting": "limits.max_limit"}


def test_default_limit_above_a_tools_own_maximum_is_lowered_to_that_maximum():
    spec = default_registry().get("eco_search_sites")
    assert spec is not None
    args = cap_page_sizes(spec.input_model.model_validate({}), 500, default_limit=300)
    assert args.limit == 100  # eco_search_sites takes at most 100


def _limit_tools() -> list[Any]:
    registry = default_registry()
    specs = [registry.get(n) for n in registry.names()]
    return [s for s in specs if s is not None and "limit" in s.input_model.model_fields]


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
