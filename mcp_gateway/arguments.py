"""Tool arguments → the tool's input model, with the spec's error for every bad input:
`invalid_argument` naming the field (and listing the valid ones for an unknown field)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from rapidfuzz import process

from eco_core.errors import EcoError
from mcp_gateway.models import ToolInput
from mcp_gateway.registry import ToolSpec


def _valid_list(spec: ToolSpec) -> list[str]:
    return list(spec.input_model.model_fields)


def _describe(err: Mapping[str, Any], spec: ToolSpec) -> tuple[str, str]:
    loc = [str(p) for p in err.get("loc", ())]
    field = loc[0] if loc else "arguments"
    # Report the snake_case name whichever spelling was sent.
    field = spec.argument_names.get(field, field)
    path = ".".join([field, *loc[1:]])
    return path, err.get("msg", "invalid value")


def parse_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> ToolInput:
    args = dict(arguments or {})
    valid = _valid_list(spec)
    seen: dict[str, str] = {}
    for key in args:
        field = spec.argument_names.get(key)
        if field is None:
            near = [m[0] for m in process.extract(key, valid, limit=3, score_cutoff=60)]
            raise EcoError(
                "invalid_argument",
                f"unknown argument '{key}' for {spec.name}; valid arguments: {', '.join(valid) or '(none)'}",
                details={"field": key, "validArguments": valid, "didYouMean": near},
            )
        if field in seen:
            raise EcoError(
                "invalid_argument",
                f"argument '{field}' given twice (as '{seen[field]}' and '{key}')",
                details={"field": field},
            )
        seen[field] = key
    try:
        return spec.input_model.model_validate(args)
    except ValidationError as exc:
        problems = [_describe(e, spec) for e in exc.errors(include_url=False, include_input=False)]
        first_field, first_msg = problems[0]
        raise EcoError(
            "invalid_argument",
            f"argument '{first_field}': {first_msg}",
            details={"field": first_field, "errors": [{"field": f, "message": m} for f, m in problems]},
        ) from None
