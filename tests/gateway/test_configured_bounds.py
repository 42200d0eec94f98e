"""A bound that is a setting (eco_core.bounds.Configured) is published in the tool's input schema
from the configuration and refused once, at the boundary, before the read runs."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from eco_core.bounds import Configured
from eco_core.config import load_config
from eco_core.wire import Envelope, ToolInput
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import ToolSpec
from mcp_gateway.schemas import input_schema

SITES = "limits.max_sites_per_call"


class SitesInput(ToolInput):
    site_codes: Annotated[list[str], Configured(SITES, "maxItems")] = Field(min_length=1)
    more_codes: Annotated[list[str] | None, Configured(SITES, "maxItems")] = None


class SitesOutput(Envelope):
    count: int


reads: list[int] = []


async def count_sites(args: SitesInput, call: CallContext) -> SitesOutput:
    reads.append(len(args.site_codes))
    return SitesOutput(count=len(args.site_codes))


SPEC = ToolSpec(name="eco_sites", title="Sites", description="Test tool.", surface="test",
                input_model=SitesInput, output_model=SitesOutput, read=count_sites)


def _cfg(max_sites: int):
    return load_config(flags={SITES: max_sites}, env={}, warn=False)


def test_the_schema_shows_the_configured_bound_on_the_field_and_on_an_optional_field():
    for limit in (30, 7):
        props = input_schema(SitesInput, _cfg(limit))["properties"]
        assert props["site_codes"]["maxItems"] == limit and props["site_codes"]["minItems"] == 1
        assert props["more_codes"]["maxItems"] == limit


async def test_a_value_over_the_configured_bound_is_refused_naming_field_and_setting_before_the_read():
    cfg = _cfg(3)
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
    reads.clear()
    refused = await execute(SPEC, {"site_codes": ["A", "B", "C", "D"]}, call, token=None)
    error = refused.structured_content["error"]
    assert refused.is_error and error["code"] == "invalid_argument"
    assert error["details"] == {"field": "site_codes", "maximum": 3, "setting": SITES}
    assert "site_codes" in error["message"] and reads == []
    accepted = await execute(SPEC, {"site_codes": ["A", "B", "C"]}, call, token=None)
    assert not accepted.is_error and accepted.structured_content["count"] == 3 and reads == [3]
    wider = CallContext(cfg=_cfg(10), transport="stdio", protocol_version="2026-07-28")
    assert not (await execute(SPEC, {"site_codes": ["A", "B", "C", "D"]}, wider, token=None)).is_error


class BudgetInput(ToolInput):
    budget: Annotated[int, Configured("limits.graphql_hard_max_response_bytes", "maximum")] = Field(50000, ge=1000)


class BudgetOutput(Envelope):
    budget: int


async def echo_budget(args: BudgetInput, call: CallContext) -> BudgetOutput:
    return BudgetOutput(budget=args.budget)


async def test_a_default_above_a_lower_configured_bound_is_lowered_and_a_sent_value_refused():
    spec = ToolSpec(name="eco_budget", title="Budget", description="Test tool.", surface="test",
                    input_model=BudgetInput, output_model=BudgetOutput, read=echo_budget)
    cfg = load_config(flags={"limits.graphql_hard_max_response_bytes": 2000}, env={}, warn=False)
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
    assert (await execute(spec, {}, call, token=None)).structured_content["budget"] == 2000
    refused = await execute(spec, {"budget": 3000}, call, token=None)
    assert refused.is_error and refused.structured_content["error"]["details"]["field"] == "budget"
