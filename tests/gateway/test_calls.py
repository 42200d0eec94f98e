"""One tool call through the gateway's pipeline: arguments, envelope, budget, errors."""

from __future__ import annotations

import logging

import jsonschema
import pytest

from eco_core.errors import CODES
from families.call import CallContext
from mcp_gateway.calls import execute
from tests.gateway.checks import assert_error
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec


def _call(cfg=None, transport="stdio") -> CallContext:
    return CallContext(cfg=cfg or make_cfg(), transport=transport, protocol_version="2026-07-28")


async def _run(args, *, spec=None, cfg=None, transport="stdio", token=None):
    spec = spec or echo_spec()
    result = await execute(spec, args, _call(cfg, transport), token=token)
    if not result.is_error:
        jsonschema.Draft202012Validator(spec.tool.output_schema).validate(result.structured_content)
    return result


async def test_snake_case_and_camel_case_spellings_are_both_accepted():
    snake = await _run({"product_code": "DP1.10003.001", "start_date_month": "2024-01"})
    camel = await _run({"productCode": "DP1.10003.001", "startDateMonth": "2024-01"})
    assert snake.structured_content == camel.structured_content
    assert camel.structured_content["productCode"] == "DP1.10003.001"


async def test_unknown_argument_gives_invalid_argument_naming_it_and_listing_valid_ones():
    err = assert_error(await _run({"prodcut_code": "x"}), "invalid_argument")
    assert "prodcut_code" in err["message"]
    assert "product_code" in err["details"]["validArguments"]
    assert err["details"]["didYouMean"][0] == "product_code"


async def test_the_same_argument_in_both_spellings_is_refused_as_conflicting():
    err = assert_error(await _run({"product_code": "a", "productCode": "b"}), "invalid_argument")
    assert err["details"]["field"] == "product_code"


async def test_out_of_bounds_value_gives_invalid_argument_naming_the_field():
    err = assert_error(await _run({"limit": 101}), "invalid_argument")
    assert err["details"]["field"] == "limit"
    assert "limit" in err["message"] and "100" in err["message"]


async def test_a_camel_case_argument_error_is_reported_under_the_snake_case_name():
    err = assert_error(await _run({"startDateMonth": "2024-1"}), "invalid_argument")
    assert err["details"]["field"] == "start_date_month"


async def test_success_carries_the_envelope_and_upstream_meta():
    result = await _run({"product_code": "DP1"})
    assert {"resolved", "notes", "nextSteps", "source"} <= set(result.structured_content)
    assert result.structured_content["resolved"] == {"product": "DP1"}
    assert result.meta["io.eco-mcp/upstream"]["identity"] == "anonymous"


@pytest.mark.parametrize("code", [c for c in CODES if c != "internal_error"])
async def test_every_stable_error_code_reaches_the_caller_as_an_error_result(code):
    err = assert_error(await _run({"fail": "eco", "code": code}), code)
    # not_found always carries its suggestions as a list, even an empty one.
    assert err["details"] == ({"asked": True, "didYouMean": []} if code == "not_found" else {"asked": True})
    assert err["hint"]


async def test_a_bug_becomes_internal_error_with_a_correlation_id_found_in_one_log_line(caplog):
    with caplog.at_level(logging.ERROR, logger="eco.gateway"):
        result = await _run({"fail": "bug"})
    err = assert_error(result, "internal_error")
    cid = err["details"]["correlationId"]
    lines = [r for r in caplog.records if cid in r.getMessage()]
    assert len(lines) == 1 and (lines[0].exc_info or lines[0].exc_text)
    assert "ZeroDivisionError" not in err["message"]


async def test_a_handler_returning_a_wrong_shape_is_an_internal_error_not_a_bad_result():
    assert_error(await _run({"fail": "bad_output"}), "internal_error")


async def test_a_result_above_the_budget_drops_items_from_the_end_and_marks_the_page():
    cfg = make_cfg(limits__max_result_bytes=5000)
    result = await _run({"count": 100, "size": 200, "offset": 10}, cfg=cfg)
    body = result.structured_content
    assert 0 < len(body["items"]) < 100
    assert [i["n"] for i in body["items"]] == list(range(len(body["items"])))
    assert body["page"]["truncated"] is True
    assert body["page"]["nextOffset"] == 10 + len(body["items"])
    assert any("trimmed" in n for n in body["notes"])


async def test_a_result_that_cannot_be_trimmed_under_the_hard_limit_is_result_too_large():
    cfg = make_cfg(limits__max_result_bytes=1000, limits__hard_max_result_bytes=2000)
    spec = echo_spec(page_lists={})
    # One record larger than the hard limit: trimming lists cannot help.
    result = await execute(spec, {"count": 1, "size": 5000}, _call(cfg), token=None)
    # A single item list is trimmed to empty, which fits: so the call succeeds and says so.
    assert not result.is_error and result.structured_content["items"] == []
    err_result = await execute(echo_spec(), {"count": 0, "product_code": "x" * 3000}, _call(cfg), token=None)
    assert_error(err_result, "result_too_large")


async def test_a_result_within_the_budget_is_not_touched():
    result = await _run({"count": 3, "size": 10})
    assert result.structured_content["page"]["truncated"] is False
    assert not any("trimmed" in n for n in result.structured_content["notes"])


async def test_a_stdio_only_tool_called_over_http_gives_not_available_in_http_mode():
    spec = echo_spec(stdio_only=True)
    result = await execute(spec, {}, _call(make_cfg(), transport="http"), token=None)
    assert_error(result, "not_available_in_http_mode")


async def test_a_token_tool_without_a_token_fails_with_auth_required_before_the_handler_runs():
    spec = echo_spec(requires_token=True)
    err = assert_error(await execute(spec, {"fail": "bug"}, _call(), token=None), "auth_required")
    assert err["details"]["tool"] == "eco_echo"


async def test_the_token_never_appears_in_a_result_or_an_error():
    token = "sekret-token-value-123456"
    spec = echo_spec(requires_token=True)
    ok = await execute(spec, {"product_code": token}, _call(), token=token)
    bad = await execute(spec, {"fail": "eco", "code": "forbidden", "product_code": token}, _call(), token=token)
    for result in (ok, bad):
        assert token not in result.content[0].text
        assert token not in str(result.structured_content)
        assert token not in str(result.meta)
