"""The shapes every answer shares on the wire: the camelCase base model and the page object.

They live in the foundation because the reads that build answers (catalog, downloads) sit below
the gateway that sends them, and each family returns these types directly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


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
