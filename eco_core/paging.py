"""The operator's ceiling on page sizes, applied to every tool in one place.

Each tool declares its own default and maximum page size (the spec gives them per tool, in the
tool's input schema). `limits.max_limit` is a ceiling over all of them, checked at call time
after the schema: a page-size argument the caller sent above it is `invalid_argument` naming
the argument and the ceiling; a tool's own default above it is lowered to it, so a call that
sends no page size still works on a server configured with small pages.

A page-size argument is `limit` or any `<something>_limit` (`change_logs_limit`,
`products_limit`, `events_limit`): each sizes one page of a paged list.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from eco_core.errors import EcoError

ArgsT = TypeVar("ArgsT", bound=BaseModel)

SETTING = "limits.max_limit"


def is_page_size(name: str) -> bool:
    return name == "limit" or name.endswith("_limit")


def cap_page_sizes(args: ArgsT, max_limit: int) -> ArgsT:
    """`args` with every page size at most `max_limit`; raises when the caller asked for more."""
    lowered: dict[str, int] = {}
    for name in filter(is_page_size, type(args).model_fields):
        value = getattr(args, name)
        if not isinstance(value, int) or value <= max_limit:
            continue
        if name in args.model_fields_set:
            raise EcoError(
                "invalid_argument",
                f"argument '{name}': must be at most {max_limit} on this server ({SETTING})",
                details={"field": name, "maximum": max_limit, "setting": SETTING},
            )
        lowered[name] = max_limit
    return args.model_copy(update=lowered) if lowered else args
