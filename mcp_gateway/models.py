"""Base models every tool declares its inputs and outputs with (the envelope around every answer).

Inputs are snake_case with the upstream's camelCase spellings accepted as aliases; outputs are
camelCase on the wire. Both carry JSON Schema 2020-12 declarations when rendered for tools/list.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from eco_core.wire import Page, WireModel

__all__ = [
    "JSON_SCHEMA_2020_12", "Envelope", "NextStep", "Page", "Source", "ToolInput", "WireModel", "input_schema",
    "output_schema",
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
    )


class NextStep(WireModel):
    tool: str = Field(description="Tool to call next.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Suggested arguments.")
    why: str = Field("", description="What the call would give.")


class Source(WireModel):
    """Where the answer came from: the agent can judge freshness and cost."""

    origin: Literal["local", "catalog", "upstream", "cache", "mixed"] = Field(
        "local", description="local (no upstream), catalog (cached catalog), upstream, cache, or mixed."
    )
    endpoints: list[str] = Field(default_factory=list, description="Upstream endpoints behind the answer.")
    api_base_url: str | None = Field(None, description="Upstream REST base URL, when upstream data is involved.")
    stale: bool = Field(False, description="True when a stale cached answer was served because upstream failed.")


class Envelope(WireModel):
    """The common envelope of every successful result; tool outputs subclass it."""

    resolved: dict[str, Any] = Field(default_factory=dict, description="How names in the input were resolved.")
    notes: list[str] = Field(default_factory=list, description="Caveats the agent should know about.")
    next_steps: list[NextStep] = Field(default_factory=list, description="Useful follow-up calls.")
    source: Source = Field(default_factory=Source)


_MAPS = ("properties", "$defs", "patternProperties")
_DATA = ("default", "examples", "const", "enum")


def _drop_titles(node: Any) -> Any:
    """Pydantic's generated titles repeat the field names; tools/list has a byte budget."""
    if isinstance(node, list):
        return [_drop_titles(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _DATA:
            out[key] = value
        elif key in _MAPS and isinstance(value, dict):
            out[key] = {name: _drop_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _drop_titles(value)
    return out


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    schema = _drop_titles(model.model_json_schema(by_alias=False, mode="validation"))
    # camelCase spellings are accepted too, so the schema must not forbid other property names.
    schema.pop("additionalProperties", None)
    return {"$schema": JSON_SCHEMA_2020_12, **schema}


def output_schema(model: type[Envelope]) -> dict[str, Any]:
    schema = _drop_titles(model.model_json_schema(by_alias=True, mode="serialization"))
    return {"$schema": JSON_SCHEMA_2020_12, **schema}
