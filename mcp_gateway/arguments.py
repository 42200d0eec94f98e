"""Tool arguments → the tool's input model, with the spec's error for every bad input:
`invalid_argument` naming the field (and listing the valid ones for an unknown field).

Two rules hold for every tool, whoever declares it:
- The upstream's camelCase spellings are accepted (spec, What the service does §6): a tool's own
  names in camelCase, and the upstream's names for the same thing (`productCode` for `product`,
  `startDateMonth` for `start_month`, ...) wherever the tool has a field meaning that. Two
  spellings of one input in one call are refused.
- The inputSchema's JSON types are the contract: arguments are validated as JSON in strict mode, so
  `true` is not 1, `"5"` is not 5 and `"yes"` is not a boolean (a string still reads as a date or
  an enum member, as JSON has no other way to say those)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from eco_core.errors import EcoError
from eco_core.memo import memos
from eco_core.wire import ToolInput
from mcp_gateway.registry import ToolSpec
from upstream.segments import PathSegmentError, segment_message

# The upstream's spelling → the tool fields that can mean the same thing, in order of preference;
# a spelling applies to a tool only when the tool has one of these fields.
UPSTREAM_SPELLINGS: dict[str, tuple[str, ...]] = {
    "productCode": ("product_code", "product"),
    "productCodes": ("product_codes", "products"),
    "siteCode": ("site_code", "site"),
    "siteCodes": ("site_codes", "sites"),
    "startDateMonth": ("start_month",),
    "endDateMonth": ("end_month",),
    "domainCode": ("domain_code", "domain"),
    "stateCode": ("state_code", "state"),
    "siteType": ("site_type",),
    "releaseTag": ("release",),
    "locationName": ("location_name", "location"),
    "sampleTag": ("sample_tag",),
    "sampleClass": ("sample_class",),
    "taxonTypeCode": ("taxon_type_code", "taxon_type"),
    "packageType": ("package",),
    "prototypeUuid": ("uuid", "prototype_uuid"),
}


# A tool's spellings and fields never change once it is declared: worked out once per tool, not
# on every call (keyed by name and input model, as a ToolSpec holds unhashable mappings).
_NAMES: dict[tuple[str, type[ToolInput]], tuple[dict[str, str], list[str]]] = {}


def _spellings(spec: ToolSpec) -> tuple[dict[str, str], list[str]]:
    key = (spec.name, spec.input_model)
    found = _NAMES.get(key)
    if found is None:
        found = _NAMES[key] = (accepted_names(spec), list(spec.input_model.model_fields))
    return found


def accepted_names(spec: ToolSpec) -> dict[str, str]:
    """Every spelling the tool accepts → its field name."""
    names = dict(spec.argument_names)
    fields = spec.input_model.model_fields
    for spelling, candidates in UPSTREAM_SPELLINGS.items():
        if spelling in names:
            continue
        target = next((c for c in candidates if c in fields), None)
        if target is not None:
            names[spelling] = target
    return names


def _describe(err: Mapping[str, Any], names: Mapping[str, str]) -> tuple[str, str]:
    loc = [str(p) for p in err.get("loc", ())]
    field = loc[0] if loc else "arguments"
    field = names.get(field, field)
    path = ".".join([field, *loc[1:]])
    return path, err.get("msg", "invalid value")


def parse_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> ToolInput:
    args = arguments or {}
    names, valid = _spellings(spec)
    if not args:
        # No arguments: every field takes its default (a required one is reported as missing).
        return _validated(spec, "{}", names)
    by_field: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for key, value in args.items():
        field = names.get(key)
        if field is None:
            # The fuzzy matcher is loaded by the first misspelt argument, not by every worker.
            from rapidfuzz import process

            near = [m[0] for m in process.extract(key, valid, limit=3, score_cutoff=60)]
            raise EcoError(
                "invalid_argument",
                f"unknown argument '{key}' for {spec.name}; valid arguments: {', '.join(valid) or '(none)'}",
                details={"field": key, "validArguments": list(valid), "didYouMean": near},
            )
        if field in seen:
            raise EcoError(
                "invalid_argument",
                f"argument '{field}' given twice (as '{seen[field]}' and '{key}')",
                details={"field": field},
            )
        seen[field] = key
        by_field[field] = value
    try:
        # Arguments arrive as JSON; validating them as JSON in strict mode keeps the schema's types.
        text = json.dumps(by_field, allow_nan=False)
    except (TypeError, ValueError):
        raise EcoError("invalid_argument", "arguments are not plain JSON values", details={"field": "arguments"}) from None
    return _validated(spec, text, names)


# Valid inputs kept by their JSON text per input model: the same arguments validate to the same
# input, and inputs are frozen, so one instance serves every call that sends them (many callers
# send the same few searches and lookups, and validation was most of parsing's cost). Only inputs
# holding no filled list or object are kept: frozen stops reassignment, not a read changing a list
# inside.
_kept_inputs = memos.by_value("arguments.inputs", max_entries=1024)


def keepable(args: ToolInput) -> bool:
    """Whether this input is kept: then the same arguments always arrive as this same object."""
    return all(not isinstance(v, (list, dict, set)) or not v for v in args.__dict__.values())


def _validated(spec: ToolSpec, text: str, names: Mapping[str, str]) -> ToolInput:
    key = (spec.input_model, text)
    kept = _kept_inputs.get(key)
    if kept is not None:
        return kept
    try:
        args = spec.input_model.model_validate_json(text, strict=True)
    except ValidationError as exc:
        problems = [_describe(e, names) for e in exc.errors(include_url=False, include_input=False)]
        first_field, first_msg = problems[0]
        raise EcoError(
            "invalid_argument",
            f"argument '{first_field}': {first_msg}",
            details={"field": first_field, "errors": [{"field": f, "message": m} for f, m in problems]},
        ) from None
    if keepable(args):
        _kept_inputs.put(key, args)
    return args


def name_segment_field(spec: ToolSpec, args: ToolInput | None, exc: PathSegmentError) -> EcoError:
    """The upstream client refused an identifier as a URL path segment ('..', '/'), naming the
    upstream's parameter: the same invalid_argument, naming the tool's field that held the value
    (else the field the upstream's spelling stands for in this tool)."""
    field = None

    def held(value: Any) -> bool:
        # As given, or as the read passed it on (names are stripped of surrounding whitespace).
        return value == exc.value or (isinstance(value, str) and value.strip() == exc.value.strip())

    if args is not None:
        for name in type(args).model_fields:
            value = getattr(args, name, None)
            if held(value) or (isinstance(value, list) and any(held(v) for v in value)):
                field = name
                break
    if field is None:
        field = accepted_names(spec).get(exc.parameter, exc.parameter)
    return EcoError("invalid_argument", segment_message(field, exc.value), details={"field": field})
