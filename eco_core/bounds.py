"""Input bounds that are settings: declared once on the input field, published in its schema from
the configuration, and checked once, at the schema boundary, before any read runs.

    site_codes: Annotated[list[str], Configured("limits.max_sites_per_call", "maxItems")] = Field(min_length=1)

The gateway renders `maxItems` (or `maximum`, `maxLength`) from the active configuration into the
tool's input schema, and refuses a larger value as `invalid_argument` naming the field and the
setting; reads never check the same bound again. A bound that is not a setting stays a plain
`Field(le=...)`/`max_length=` of the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from eco_core.errors import EcoError

KEYWORDS = ("maxItems", "maximum", "maxLength")


@dataclass(frozen=True)
class Configured:
    setting: str  # dotted path of an integer setting, e.g. "limits.max_sites_per_call"
    keyword: str  # the JSON Schema keyword it bounds: maxItems, maximum or maxLength

    def __post_init__(self) -> None:
        if self.keyword not in KEYWORDS:
            raise ValueError(f"Configured bound keyword must be one of {KEYWORDS}, not {self.keyword!r}")


def setting_value(cfg: Any, setting: str) -> int:
    value = cfg
    for part in setting.split("."):
        value = getattr(value, part)
    return int(value)


def configured_bounds(model: type[BaseModel]) -> list[tuple[str, Configured]]:
    """Every (field name, bound) the model declares, in field order."""
    return [(name, m) for name, f in model.model_fields.items() for m in f.metadata if isinstance(m, Configured)]


def _measure(value: Any, keyword: str) -> int | None:
    if value is None:
        return None
    if keyword == "maximum":
        return value if isinstance(value, int) else None
    return len(value) if isinstance(value, (list, tuple, str)) else None


def check_bounds(args: BaseModel, cfg: Any) -> BaseModel:
    """`args` within their configured bounds: a value the caller sent above its bound is refused,
    naming the field and the setting; a default above it (a server configured below the
    declared default) is lowered to it."""
    lowered: dict[str, Any] = {}
    for name, bound in configured_bounds(type(args)):
        value = getattr(args, name)
        size = _measure(value, bound.keyword)
        limit = setting_value(cfg, bound.setting)
        if size is None or size <= limit:
            continue
        if name not in args.model_fields_set and bound.keyword == "maximum":
            lowered[name] = limit
            continue
        what = {"maxItems": "items", "maxLength": "characters", "maximum": ""}[bound.keyword]
        shown = f"{size} {what}".strip()
        raise EcoError(
            "invalid_argument",
            f"argument '{name}': {shown}, at most {limit} on this server ({bound.setting})",
            details={"field": name, "maximum": limit, "setting": bound.setting},
        )
    return args.model_copy(update=lowered) if lowered else args


def apply_to_schema(schema: dict[str, Any], model: type[BaseModel], cfg: Any) -> dict[str, Any]:
    """The input schema with each configured bound written from `cfg` (on the field itself, or on
    its non-null branch for an optional field)."""
    props = schema.get("properties", {})
    for name, bound in configured_bounds(model):
        node = props.get(name)
        if node is None:
            continue
        target = node
        for branch in node.get("anyOf", ()):
            if branch.get("type") != "null":
                target = branch
                break
        target[bound.keyword] = setting_value(cfg, bound.setting)
    return schema
