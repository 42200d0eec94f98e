"""A tool result reaches the SDK in its wire form (mcp_gateway.server._wire), skipping the SDK's
own dump of the model: what the SDK then sends must be exactly what it sends for the model, for
every protocol version it serves."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp_types.methods import serialize_server_result
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.server import _wire
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec


async def _results() -> list[types.CallToolResult]:
    call = CallContext(cfg=make_cfg(), transport="stdio", protocol_version="2026-07-28")
    ok = await execute(echo_spec(), {"product_code": "DP1.10003.001", "start_date_month": "2024-01"}, call,
                       token=None, extra_meta={"io.example/stamp": {"name": "x"}})
    refused = await execute(echo_spec(), {"nope": 1}, call, token=None)
    assert not ok.is_error and refused.is_error
    return [ok, refused]


@pytest.mark.parametrize("version", sorted(KNOWN_PROTOCOL_VERSIONS))
async def test_the_wire_form_is_sent_exactly_as_the_model_would_be(version):
    for result in await _results():
        wire = _wire(result)
        assert isinstance(wire, dict)
        from_model = serialize_server_result("tools/call", version, result.model_dump(
            by_alias=True, mode="json", exclude_none=True))
        assert serialize_server_result("tools/call", version, wire) == from_model


def test_content_other_than_plain_text_is_left_to_the_sdk():
    image = types.CallToolResult(content=[types.ImageContent(type="image", data="aGk=", mime_type="image/png")])
    annotated = types.CallToolResult(content=[types.TextContent(
        type="text", text="x", annotations=types.Annotations(priority=0.5))])
    assert _wire(image) is image
    assert _wire(annotated) is annotated


async def test_a_reply_scope_gets_the_wire_form_with_placeholders_that_fill_to_the_same_result():
    """calls.execute_for_reply skips the model (and the payload's dump) inside an HTTP reply's
    splice scope: once filled, the reply carries exactly what _wire(execute(...)) would."""
    import json

    from mcp_gateway import splice
    from mcp_gateway.calls import execute_for_reply

    call = CallContext(cfg=make_cfg(), transport="http", protocol_version="2026-07-28")
    arguments = {"product_code": "DP1.10003.001", "start_date_month": "2024-01"}
    meta = {"io.example/stamp": {"name": "x"}}
    expected = _wire(await execute(echo_spec(), arguments, call, token=None, extra_meta=meta))
    with splice.scope() as pending:
        wire = await execute_for_reply(echo_spec(), arguments, call, token=None, extra_meta=meta)
        assert isinstance(wire, dict) and list(wire) == list(expected)
        assert isinstance(expected, dict) and set(wire["structuredContent"]) == {splice.KEY}
        filled = json.loads(splice.fill(json.dumps({"result": wire}).encode(), pending))["result"]
    assert not pending
    expected["_meta"].pop("io.eco-mcp/upstream"), filled["_meta"].pop("io.eco-mcp/upstream")
    assert filled == expected
    assert filled["structuredContent"] == json.loads(filled["content"][0]["text"])


async def test_outside_a_reply_scope_execute_for_reply_gives_the_model():
    from mcp_gateway.calls import execute_for_reply

    call = CallContext(cfg=make_cfg(), transport="stdio", protocol_version="2026-07-28")
    result = await execute_for_reply(echo_spec(), {"product_code": "DP1.10003.001"}, call, token=None)
    assert isinstance(result, types.CallToolResult) and not result.is_error
    assert result.structured_content is not None and result.structured_content["productCode"] == "DP1.10003.001"
