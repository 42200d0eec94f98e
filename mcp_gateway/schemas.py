"""Tool schemas as tools/list shows them: JSON Schema 2020-12, compacted, because every agent
loads the whole list into its context (limits.tools_list_max_bytes). The models themselves are
declared by each family (families/) on the wire bases of eco_core.wire."""

from __future__ import annotations

from typing import Any

from eco_core.bounds import apply_to_schema
from eco_core.config import EcoConfig, get_config
from eco_core.wire import Envelope, ToolInput

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"

_MAPS = ("properties", "$defs", "patternProperties")
_DATA = ("default", "examples", "const", "enum")
# Keywords that constrain what a caller may send; on an output they only restate what the server does.
_INPUT_ONLY = ("default", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")


def _compact(node: Any, *, output: bool) -> Any:
    """The same schema in fewer bytes: no generated titles (they repeat the field names), a
    nullable `anyOf [X, null]` of plain types as one `type` list, no `additionalProperties: true`
    (the default); in output schemas no defaults (every output field is always sent), no bounds
    and no closed objects (they constrain senders; the server is the only sender of an output)."""
    if isinstance(node, list):
        return [_compact(n, output=output) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "additionalProperties" and (value is True or output)) or (
                output and key in _INPUT_ONLY):
            continue
        if key == "default" and value is None:
            continue  # an optional input with no default is null when absent: saying so costs bytes
        if key in _DATA:
            out[key] = value
        elif key in _MAPS and isinstance(value, dict):
            out[key] = {name: _compact(sub, output=output) for name, sub in value.items()}
        else:
            out[key] = _compact(value, output=output)
    return _merge_nullable(out)


def _merge_nullable(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = next(b for b in branches if b != {"type": "null"})
    # Only a bare-typed branch merges without changing meaning ({"type": "string", "pattern": ...}
    # would let the pattern apply to null too, which is still right, but enums would not be).
    if not isinstance(other.get("type"), str) or "enum" in other or "const" in other:
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    return {**other, **merged, "type": [other["type"], "null"]}


def input_schema(model: type[ToolInput], cfg: EcoConfig | None = None) -> dict[str, Any]:
    """The model's schema, with bounds that are settings (eco_core.bounds) from `cfg` (default:
    the active configuration)."""
    schema = _compact(model.model_json_schema(by_alias=False, mode="validation"), output=False)
    # camelCase spellings are accepted too, so the schema must not forbid other property names.
    schema.pop("additionalProperties", None)
    return {"$schema": JSON_SCHEMA_2020_12, **apply_to_schema(schema, model, cfg or get_config())}


def output_schema(model: type[Envelope]) -> dict[str, Any]:
    schema = _compact(model.model_json_schema(by_alias=True, mode="serialization"), output=True)
    return {"$schema": JSON_SCHEMA_2020_12, **schema}
