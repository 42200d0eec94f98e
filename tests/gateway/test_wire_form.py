"""A tool result reaches the SDK in its wire form (mcp_gateway.server._wire), skipping the SDK's
own dump of the model: what the SDK then sends must be exactly what it sends for the model, for
every protocol version it serves."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp_types.methods import serialize_server_result
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from mcp_gateway.calls import execute
from mcp_gateway.context import CallContext
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
