"""Assertions shared by the client tests: a tool result is checked against its own declared
output schema, the envelope and the result _meta."""

from __future__ import annotations

from typing import Any

import jsonschema
from mcp_types import SERVER_INFO_META_KEY

ENVELOPE = {"resolved", "notes", "nextSteps", "source"}


def assert_valid_tool_result(tool: Any, result: Any) -> dict[str, Any]:
    assert not result.is_error, result.structured_content
    payload = result.structured_content
    schema = tool.output_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator(schema).validate(payload)
    assert ENVELOPE <= set(payload)
    meta = result.meta or {}
    assert SERVER_INFO_META_KEY in meta and meta[SERVER_INFO_META_KEY]["name"] == "eco-mcp"
    assert {"requests", "cacheHits", "identity"} <= set(meta["io.eco-mcp/upstream"])
    return payload


def assert_error(result: Any, code: str) -> dict[str, Any]:
    assert result.is_error
    err = result.structured_content["error"]
    assert err["code"] == code, err
    assert {"code", "message", "details", "hint"} <= set(err)
    return err
