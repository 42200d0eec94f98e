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


def outcome_of(tool: Any, result: Any) -> str:
    """The call's outcome: "ok" for a result valid against the tool's output schema, else its
    error code, which must be a stable one and never internal_error."""
    from eco_core.errors import CODES

    if result.is_error:
        code = result.structured_content["error"]["code"]
        assert code in CODES and code != "internal_error", (tool.name, result.structured_content)
        return str(code)
    jsonschema.Draft202012Validator(tool.output_schema).validate(result.structured_content)
    return "ok"
