"""`limits.max_limit` caps every tool's page sizes at call time, in one place for all tools."""

from __future__ import annotations

import pytest

from eco_core.config import load_config
from eco_core.errors import EcoError
from eco_core.paging import cap_page_sizes
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry


def _spec(name: str):
    spec = default_registry().get(name)
    assert spec is not None, name
    return spec


async def _call(name: str, arguments: dict, max_limit: int) -> dict:
    cfg = load_config(flags={"limits.max_limit": max_limit}, env={}, warn=False)
    call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
    result = await execute(_spec(name), arguments, call, token=None)
    assert result.is_error
    return result.structured_content["error"]


@pytest.mark.parametrize(
    ("tool", "field", "value"),
    [("eco_search_products", "limit", 30), ("eco_get_availability", "limit", 21),
     ("eco_get_product", "change_logs_limit", 50), ("eco_search_sites", "limit", 100)],
)
async def test_a_page_size_above_max_limit_is_invalid_argument_naming_the_field_and_the_cap(tool, field, value):
    arguments = {field: value, **({"product": "DP1.10003.001"} if tool == "eco_get_product" else {})}
    error = await _call(tool, arguments, max_limit=20)
    assert error["code"] == "invalid_argument"
    assert f"'{field}'" in error["message"] and "20" in error["message"] and "limits.max_limit" in error["message"]
    assert error["details"]["field"] == field and error["details"]["maximum"] == 20


def test_a_tool_default_above_max_limit_is_lowered_to_it_and_a_value_at_the_cap_is_kept():
    spec = _spec("eco_get_product")
    args = cap_page_sizes(spec.input_model.model_validate({"product": "DP1.10003.001", "change_logs_limit": 20}), 20)
    assert args.availability_limit == 20  # its own default is 100
    assert args.change_logs_limit == 20


def test_with_the_default_max_limit_every_tools_own_largest_page_size_is_accepted():
    cap = load_config(env={}, warn=False).limits.max_limit
    registry = default_registry()
    for spec in (registry.get(n) for n in registry.names()):
        assert spec is not None
        for name, field in spec.input_model.model_fields.items():
            if name != "limit" and not name.endswith("_limit"):
                continue
            largest = max(getattr(m, "le", 0) or 0 for m in field.metadata)
            # Only the page size matters here; required identifiers (codes, uuids, names) have
            # patterns of their own, so the arguments are built without validating them.
            args = spec.input_model.model_construct(**{name: largest})
            assert getattr(cap_page_sizes(args, cap), name) == largest, (spec.name, name)


def test_a_page_size_within_the_cap_is_left_alone():
    spec = _spec("eco_search_products")
    args = spec.input_model.model_validate({"limit": 7})
    assert cap_page_sizes(args, 20) is args
    with pytest.raises(EcoError, match="'limit'"):
        cap_page_sizes(spec.input_model.model_validate({"limit": 21}), 20)
