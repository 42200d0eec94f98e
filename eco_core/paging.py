"""The operator's page sizes, applied to every tool in one place (mcp_gateway.calls, after the
arguments are validated against the tool's schema).

`limits.default_limit` is the page size of a call that sends no `limit`, on every tool whose
spec default is the service's (50): such a field is declared `limit: DefaultLimit = Field(50, ...)`.
A tool with a default of its own (eco_search_products' 25, eco_get_availability's 100) keeps it.
The configured value is lowered to the tool's own maximum (`le`) when above it.

`limits.max_limit` is a ceiling over every page size: a page-size argument the caller sent above
it is `invalid_argument` naming the argument and the ceiling; a default above it (the tool's own,
or default_limit) is lowered to it, so a call that sends no page size still works on a server
configured with small pages.

What tools/list shows: a DefaultLimit field publishes the spec's default (50, which is also the
setting's default). Tool declarations are rendered once per process from the input models, not
from the configuration, so on a server configured otherwise the published default and the page
size differ; the answer's `page` (limit, nextOffset) always says what was served.

A page-size argument is `limit` or any `<something>_limit` (`change_logs_limit`,
`products_limit`, `events_limit`): each sizes one page of a paged list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from eco_core.errors import EcoError

ArgsT = TypeVar("ArgsT", bound=BaseModel)

SETTING = "limits.max_limit"
DEFAULT_SETTING = "limits.default_limit"


@dataclass(frozen=True)
class ServiceDefault:
    """Marker in a page-size field's `Annotated` metadata: when the caller omits the field, the
    server's `limits.default_limit` gives its value. Pydantic keeps unknown metadata on the
    field (`FieldInfo.metadata`) and leaves the JSON schema alone, so the published schema is
    unchanged by it."""

    setting: str = DEFAULT_SETTING


SERVICE_DEFAULT = ServiceDefault()
DefaultLimit = Annotated[int, SERVICE_DEFAULT]


@dataclass(frozen=True)
class NotAPage:
    """Marker of a `limit` that sizes no page (a query's row cap, with no offset to continue
    from): the tool's own bounds hold it, limits.max_limit does not."""


RowCap = Annotated[int, NotAPage()]


def is_page_size(name: str) -> bool:
    return name == "limit" or name.endswith("_limit")


def follows_default_limit(field: FieldInfo) -> bool:
    """Whether this field takes `limits.default_limit` when the caller omits it."""
    return SERVICE_DEFAULT in field.metadata


def own_maximum(field: FieldInfo) -> int | None:
    """The field's own `le` bound (the tool's largest page), if it declares one."""
    bounds = [m.le for m in field.metadata if isinstance(getattr(m, "le", None), int)]
    return min(bounds) if bounds else None


def cap_page_sizes(args: ArgsT, max_limit: int, *, default_limit: int | None = None) -> ArgsT:
    """`args` with every page size the caller left out filled from `default_limit` (fields marked
    DefaultLimit only; None keeps the declared default) and every page size at most `max_limit`;
    raises when the caller asked for more than `max_limit`.

    Both steps look at what the caller sent (`model_fields_set`) before anything is changed: a
    filled-in default is never mistaken for a caller's value, so it is lowered, never refused."""
    changed: dict[str, int] = {}
    fields = type(args).model_fields
    for name in filter(is_page_size, fields):
        if any(isinstance(m, NotAPage) for m in fields[name].metadata):
            continue
        value = getattr(args, name)
        if not isinstance(value, int):
            continue
        sent = name in args.model_fields_set
        if not sent and default_limit is not None and follows_default_limit(fields[name]):
            ceiling = own_maximum(fields[name])
            value = default_limit if ceiling is None else min(default_limit, ceiling)
        if value > max_limit:
            if sent:
                raise EcoError(
                    "invalid_argument",
                    f"argument '{name}': must be at most {max_limit} on this server ({SETTING})",
                    details={"field": name, "maximum": max_limit, "setting": SETTING},
                )
            value = max_limit
        if value != getattr(args, name):
            changed[name] = value
    return args.model_copy(update=changed) if changed else args
