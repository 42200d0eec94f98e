"""The shapes every tool's input and answer share on the wire: the input base, the camelCase base
model, the envelope around every answer, the page object.

They live in the foundation because the families (families/) declare their tools' inputs and
outputs on them, and the reads below (catalog, downloads) return these types directly.

Inputs are snake_case with the upstream's camelCase spellings accepted as aliases (and validated
strictly: the schema's JSON types are the contract, see mcp_gateway.arguments); outputs are
camelCase on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from eco_core.memo import memos


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


class WireModel(BaseModel):
    """Serialised by alias (camelCase). Every field is listed as required in the output schema
    because the gateway always dumps every field, nulls included."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        json_schema_serialization_defaults_required=True,
    )


class Page(WireModel):
    # Paging of one list in a result. `truncated` is set when the byte budget dropped items from
    # the end of the list; `nextOffset` then continues right after the last item kept. (A comment,
    # not a docstring: the docstring would be repeated in every tool's schema.)

    offset: int = Field(0, ge=0)
    limit: int = Field(0, ge=0)
    returned: int = Field(0, ge=0)
    total: int | None = Field(None, ge=0)
    next_offset: int | None = Field(None, ge=0)
    truncated: bool = False


class NextStep(WireModel):
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    why: str = ""


class Source(WireModel):
    # Where the answer came from, so the agent can judge freshness and cost. Every tool's schema
    # repeats this model, so it carries no descriptions: the server's instructions say once what
    # the envelope's fields mean (mcp_gateway.server), origin's values included.
    origin: Annotated[Literal["local", "catalog", "upstream", "cache", "mixed"], WithJsonSchema({"type": "string"})] = "local"
    endpoints: list[str] = Field(default_factory=list)
    api_base_url: str | None = None
    stale: bool = False


class Envelope(WireModel):
    """The common envelope of every successful result; tool outputs subclass it. Its fields
    carry no descriptions for the reason Source gives."""

    resolved: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    next_steps: list[NextStep] = Field(default_factory=list)
    source: Source = Field(default_factory=Source)


E = TypeVar("E", bound=Envelope)

# Answers a family keeps and returns again, as the very same object, for the same input: the
# gateway then keeps their dump and text (mcp_gateway.calls) instead of making them every call.
_returned = memos.by_identity("wire.returned_again", max_entries=1024)


def returned_again(out: E) -> E:
    """Marks an answer its family keeps and returns again for the same input (it must never be
    changed after this); returns it."""
    _returned.put(out, value=True)
    return out


def is_returned_again(out: object) -> bool:
    return _returned.get(out) is not None


R = TypeVar("R", bound=WireModel)


@dataclass(frozen=True)
class Answer(Generic[R]):
    """What a detail read returns: the family's record, plus what the envelope around it needs.
    `from_upstream` says whether the read asked the upstream (rather than the catalog alone)."""

    record: R
    resolved: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    from_upstream: bool = False


def page(offset: int, limit: int, returned: int, total: int) -> Page:
    """The page of `returned` items taken at `offset` out of `total`."""
    more = offset + returned < total
    return Page(offset=offset, limit=limit, returned=returned, total=total,
                next_offset=offset + returned if more else None)
