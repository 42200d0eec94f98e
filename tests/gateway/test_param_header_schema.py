"""What build_server hands the SDK for its Mcp-Param-* header check (mcp_gateway/server.py):
a tool whose input schema declares an x-mcp-header keeps the check; a tool declaring none gets
the SDK's "no schema" answer, the same verdict without walking the schema on every call."""

from __future__ import annotations

from mcp.shared.inbound import validate_mcp_param_headers
from pydantic import Field

from eco_core.wire import ToolInput
from mcp_gateway.registry import Registry
from mcp_gateway.server import build_server
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec


class RoutedInput(ToolInput):
    site: str = Field(description="A site code.", json_schema_extra={"x-mcp-header": "Site"})


def test_a_schema_declaring_a_param_header_is_checked_and_one_declaring_none_is_not_handed_over():
    server = build_server(make_cfg(), Registry([echo_spec(), echo_spec(name="eco_routed", input_model=RoutedInput)]))
    schema_of = server.get_tool_input_schema
    assert schema_of is not None
    routed = schema_of("eco_routed")
    assert routed is not None and routed["properties"]["site"]["x-mcp-header"] == "Site"
    # The SDK refuses a header that disagrees with the body, and accepts one that agrees.
    assert validate_mcp_param_headers(routed, {"site": "HARV"}, {"mcp-param-site": "BART"}) is not None
    assert validate_mcp_param_headers(routed, {"site": "HARV"}, {"mcp-param-site": "HARV"}) is None
    # No declaration: nothing to check, whatever headers come.
    assert schema_of("eco_echo") is None and schema_of("eco_echo") is None
    assert validate_mcp_param_headers(None, {"product_code": "x"}, {"mcp-param-site": "BART"}) is None
    assert schema_of("eco_unknown") is None
