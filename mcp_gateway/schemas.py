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
# Keywords that constrain what a caller may send; on an output they only restate what the server
# does. `required` among them: every output field is always sent (null when it has no value) unless
# its description says when it is absent, so listing every name a second time tells a reader nothing.
_INPUT_ONLY = ("default", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "required")
_REF = "#/$defs/"


def _compact(node: Any, *, output: bool) -> Any:
    """The same schema in fewer bytes: no generated titles (they repeat the field names), a
    nullable `anyOf [X, null]` of plain types as one `type` list, no `additionalProperties: true`
    (the default); in output schemas no defaults, no `required` (every output field is always
    sent), no bounds, no closed objects (they constrain senders; the server is the only sender of
    an output) and no schema for a map's plain values."""
    if isinstance(node, list):
        return [_compact(n, output=output) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "additionalProperties" and (value is True or (output and not _names_a_type(value)))) or (
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


def _names_a_type(value: Any) -> bool:
    # A map's values that are a model keep their schema (their fields are output fields); plain
    # values (counts, month lists) are left to the field's description.
    return isinstance(value, dict) and "$ref" in value


def _merge_nullable(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    other = next(b for b in branches if b != {"type": "null"})
    # Only a typed branch merges: its other keywords (pattern, properties, items) do not apply to
    # null; an enum would refuse null, so null joins its values.
    if not isinstance(other.get("type"), str) or "const" in other:
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    if "enum" in other:
        merged["enum"] = [*other["enum"], None]
    return {**other, **merged, "type": [other["type"], "null"]}


def _implied_types(node: Any) -> Any:
    """An output schema without the `type` that its `properties` (object), `items` (array) or
    values (`enum`, `const`: exactly those) already show; a type that also allows null beside
    properties or items stays, as does the root's (MCP requires it)."""
    if isinstance(node, list):
        return [_implied_types(n) for n in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    implied = (kind == "object" and "properties" in node) or (kind == "array" and "items" in node) or (
        "enum" in node or "const" in node)
    return {k: _implied_types(v) for k, v in node.items() if not (implied and k == "type")}


def _shared_only(schema: dict[str, Any]) -> dict[str, Any]:
    """Keeps in `$defs` only the types the schema uses more than once (each written once there);
    a type used once is written where it is used, which spares its name and its reference."""
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    uses = _count_refs(schema)
    inline = {name for name in defs if uses.get(name, 0) == 1 and name not in _count_refs(defs[name])}
    if not inline:
        return schema

    def put(node: Any) -> Any:
        if isinstance(node, list):
            return [put(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.removeprefix(_REF) in inline:
            # The field's own keywords (its description) win over the type's.
            rest = {k: put(v) for k, v in node.items() if k != "$ref"}
            return {**put(defs[ref.removeprefix(_REF)]), **rest}
        out = {k: put(v) for k, v in node.items()}
        return _merge_nullable(out) if "anyOf" in out else out

    kept = {name: put(d) for name, d in defs.items() if name not in inline}
    body = put({k: v for k, v in schema.items() if k != "$defs"})
    # A type written in place may hold the only use of another: repeat until none is left.
    return _shared_only({**body, "$defs": kept} if kept else body)


def _count_refs(node: Any, counts: dict[str, int] | None = None) -> dict[str, int]:
    counts = {} if counts is None else counts
    if isinstance(node, list):
        for n in node:
            _count_refs(n, counts)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            counts[ref.removeprefix(_REF)] = counts.get(ref.removeprefix(_REF), 0) + 1
        for key, value in node.items():
            if key != "$ref":
                _count_refs(value, counts)
    return counts


def input_schema(model: type[ToolInput], cfg: EcoConfig | None = None) -> dict[str, Any]:
    """The model's schema, with bounds that are settings (eco_core.bounds) from `cfg` (default:
    the active configuration)."""
    schema = _shared_only(_compact(model.model_json_schema(by_alias=False, mode="validation"), output=False))
    # camelCase spellings are accepted too, so the schema must not forbid other property names.
    schema.pop("additionalProperties", None)
    return {"$schema": JSON_SCHEMA_2020_12, **apply_to_schema(schema, model, cfg or get_config())}


def output_schema(model: type[Envelope]) -> dict[str, Any]:
    schema = _shared_only(_compact(model.model_json_schema(by_alias=True, mode="serialization"), output=True))
    return {"$schema": JSON_SCHEMA_2020_12, **_implied_types(schema), "type": "object"}
