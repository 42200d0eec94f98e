"""Base models every tool declares its inputs and outputs with (the envelope around every answer).

Inputs are snake_case with the upstream's camelCase spellings accepted as aliases (and validated
strictly: the schema's JSON types are the contract, see mcp_gateway.arguments); outputs are camelCase
on the wire. Both carry JSON Schema 2020-12 declarations when rendered for tools/list, compacted
because every agent loads the whole list into its context (limits.tools_list_max_bytes).
"""

from __future__ import annotations

import weakref
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from eco_core.wire import Page, WireModel

__all__ = [
    "JSON_SCHEMA_2020_12", "Envelope", "NextStep", "Page", "Source", "ToolInput", "WireModel", "input_schema",
    "is_returned_again", "output_schema", "returned_again",
]

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"


class ToolInput(BaseModel):
    """Unknown keys are caught by the gateway before validation (to list the valid ones), so the
    model forbids extras only as a second line of defence."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        frozen=True,
        strict=True,
    )


class NextStep(WireModel):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    why: str = ""


class Source(WireModel):
    # Where the answer came from, so the agent can judge freshness and cost. The field names say
    # what they hold; every tool's schema repeats this model, so it carries no descriptions.
    origin: Literal["local", "catalog", "upstream", "cache", "mixed"] = "local"
    endpoints: list[str] = Field(default_factory=list)
    api_base_url: str | None = None
    stale: bool = Field(False, description="Served from a stale cache (upstream failed).")


class Envelope(WireModel):
    """The common envelope of every successful result; tool outputs subclass it."""

    resolved: dict[str, Any] = Field(default_factory=dict, description="How input names were resolved.")
    notes: list[str] = Field(default_factory=list)
    next_steps: list[NextStep] = Field(default_factory=list)
    source: Source = Field(default_factory=Source)


_MAPS = ("properties", "$defs", "patternProperties")
_DATA = ("default", "examples", "const", "enum")
# Keywords that constrain what a caller may send; on an output they only restate what the server does.
_INPUT_ONLY = ("default", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")


E = TypeVar("E", bound=Envelope)


# Answers marked by `returned_again`, by id, each with a weak reference that drops its entry when
# the answer goes (an id is reused only after that). Not a private attribute of the model: a
# model with one runs pydantic's private-attribute set-up in Python on every construction, and
# every tool builds its answer anew on most calls.
_returned: dict[int, weakref.ref[Envelope]] = {}


def returned_again(out: E) -> E:
    """Marks an answer its tool keeps and returns again, as this same object, for the same input
    (it must never be changed after this); returns it. The gateway then keeps its dump and text
    (calls._finish) instead of making them every call."""
    key = id(out)

    def forget(ref: weakref.ref[Envelope]) -> None:
        if _returned.get(key) is ref:
            del _returned[key]

    _returned[key] = weakref.ref(out, forget)
    return out


def is_returned_again(out: object) -> bool:
    ref = _returned.get(id(out))
    return ref is not None and ref() is out


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


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    schema = _compact(model.model_json_schema(by_alias=False, mode="validation"), output=False)
    # camelCase spellings are accepted too, so the schema must not forbid other property names.
    schema.pop("additionalProperties", None)
    return {"$schema": JSON_SCHEMA_2020_12, **schema}


def output_schema(model: type[Envelope]) -> dict[str, Any]:
    schema = _compact(model.model_json_schema(by_alias=True, mode="serialization"), output=True)
    return {"$schema": JSON_SCHEMA_2020_12, **schema}
