"""The rules the spec states and a JSON Schema cannot express, for the fuzzing's judge (oracle.py):
when schema-valid arguments may still be refused with `invalid_argument`, and which field that
error must then name; and where the spec gives an invalid argument another code.

Each rule quotes the sentence of the spec (or of the published schema's description) that allows
it. Rules are per tool, plus generic ones keyed by property name (a tool registered tomorrow with
a `product` or `release` field inherits them). A tool with a cross-field rule not recorded here
fails the fuzzing, which is the point: record it, with its sentence, or fix the tool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.reliability.fuzzing import Case, snake_keys

Args = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """Schema-valid arguments the spec still refuses: `when(args)` (snake_case keys) is true, and
    the error names one of `fields`. `spec` quotes the sentence that allows it."""

    fields: tuple[str, ...]
    when: Callable[[Args], bool]
    spec: str


def _given(args: Args, *names: str) -> int:
    """How many of `names` were given (not null)."""
    return sum(args.get(n) is not None for n in names)


def _absent(args: Args, name: str) -> bool:
    """Not given, or given blank (which the service reads as not given)."""
    return args.get(name) is None or _blank(args.get(name))


def _blank(value: Any) -> bool:
    if isinstance(value, list):
        return any(_blank(v) for v in value)
    return isinstance(value, str) and not value.strip()


def _not(pattern: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and not re.fullmatch(pattern, v, re.ASCII)


def _after(args: Args, first: str, second: str) -> bool:
    a, b = args.get(first), args.get(second)
    return isinstance(a, str) and isinstance(b, str) and a > b


def _rule(fields: str, when: Callable[[Args], bool], spec: str) -> Rule:
    return Rule(tuple(fields.split()), when, spec)


MISSING = ('spec, Errors: invalid_argument is an "argument missing, malformed, unknown or conflicting"; '
           "a blank name or code is a missing one")
# Names the service resolves against its catalogs: blank ones are missing arguments, wherever a
# tool takes them (a tool registered tomorrow with these fields inherits the rule).
RESOLVED_NAMES = ("product", "product_code", "product_codes", "site", "site_code", "site_codes", "release",
                  "name", "root", "uuid", "prototype_uuid", "spec_number", "sample_tag", "sample_class",
                  "sample_uuid", "barcode", "archive_guid")
SEGMENT = ("spec, Errors: a malformed argument is invalid_argument; an identifier that becomes a URL path "
           "segment cannot be '.', '..' or hold '/', '\\' or control characters, written or percent-encoded "
           "(upstream.client decodes it once and refuses it before any request, as it does escapes left over)")


def _not_a_segment(value: Any) -> bool:
    from urllib.parse import unquote

    if isinstance(value, list):
        return any(_not_a_segment(v) for v in value)
    if not isinstance(value, str):
        return False
    try:
        decoded = unquote(value, errors="strict")
    except UnicodeDecodeError:
        return True
    if decoded != value and re.search(r"%[0-9A-Fa-f]{2}", decoded):
        return True
    return any(v.strip() in (".", "..") or "/" in v or "\\" in v or re.search(r"[\x00-\x1f\x7f-\x9f]", v)
               for v in (value, decoded))


GENERIC_RULES = (
    *(_rule(f, (lambda args, f=f: _blank(args.get(f))), MISSING) for f in RESOLVED_NAMES),
    *(_rule(f, (lambda args, f=f: _not_a_segment(args.get(f))), SEGMENT) for f in RESOLVED_NAMES),
    _rule("release", lambda a: isinstance(a.get("release"), str) and a["release"].strip().upper() == "PROVISIONAL",
          "spec, Entities: the tag PROVISIONAL is rejected wherever a release is expected"),
)
LAT_LON = _rule("latitude longitude", lambda a: _given(a, "latitude", "longitude") == 1,
                "spec, eco_search_sites / eco_find_locations: results are nearest first 'with latitude and "
                "longitude' (a pair; one alone is a conflicting argument)")
MONTH_ORDER = _rule("start_month end_month", lambda a: _after(a, "start_month", "end_month"),
                    "spec, Entities: a month range is an interval YYYY-MM/YYYY-MM; a start after its end conflicts")
ONE_SITE_MONTH = _rule("filename", lambda a: a.get("filename") is not None and (
    len(a.get("site_codes") or []) > 1 or (a.get("end_month") not in (None, a.get("start_month")))),
    "spec, eco_list_files: filename is 'one exact file name, single site and month'")
GRAPHQL_ROOTS = {"products", "product", "demoProduct", "filterProducts", "sites", "site", "filterSites",
                 "location", "locationHierarchy", "findLocations", "prototypeDatasets", "prototypeDataset"}


def _graphql_refused(args: Args) -> bool:
    """The spec's guard rails for eco_graphql's query: read-only GraphQL, allowed root fields plus one
    __type or __schema, at most 8000 characters, depth at most 8. A query this check cannot judge
    (fragments) counts as refused; depth 8 too, as the spec does not say where counting starts."""
    import graphql

    query = args.get("query")
    if not isinstance(query, str):
        return False
    if len(query) > 8000:
        return True
    try:
        doc = graphql.parse(query)
    except graphql.GraphQLError:
        return True
    ops = [d for d in doc.definitions if isinstance(d, graphql.OperationDefinitionNode)]
    if not ops or len(ops) != len(doc.definitions) or any(o.operation != graphql.OperationType.QUERY for o in ops):
        return True

    def depth(sel: Any) -> int:
        fields = [s for s in sel.selections if isinstance(s, graphql.FieldNode)] if sel else []
        if sel and len(fields) != len(sel.selections):
            return 99
        return 1 + max((depth(f.selection_set) for f in fields), default=0) if sel else 0

    roots = [f.name.value for o in ops for f in o.selection_set.selections if isinstance(f, graphql.FieldNode)]
    intro = [r for r in roots if r in ("__type", "__schema")]
    return (len(intro) > 1 or any(r not in GRAPHQL_ROOTS | {"__type", "__schema", "__typename"} for r in roots)
            or max(depth(o.selection_set) for o in ops) >= 8)


RULES: dict[str, tuple[Rule, ...]] = {
    "eco_get_availability": (
        _rule("product site", lambda a: not _given(a, "product", "site"),
              "spec, eco_get_availability Modes: product, site, or both"),
        _rule("site_codes domain_code", lambda a: _given(a, "site_codes", "domain_code") > 0 and not (
            a.get("product") and a.get("site") is None), "spec: site_codes and domain_code are for product mode"),
        _rule("product_codes", lambda a: a.get("product_codes") is not None and not (
            a.get("site") and a.get("product") is None), "spec: product_codes is for site mode"),
        _rule("provisional release", lambda a: a.get("provisional") == "only" and _given(a, "release") == 1,
              "spec: provisional 'only is not allowed with release'"),
        MONTH_ORDER,
    ),
    "eco_search_products": (
        _rule("available_from available_to", lambda a: _after(a, "available_from", "available_to"),
              "spec: available_from, available_to is a month window; a start after its end conflicts"),
    ),
    "eco_search_sites": (LAT_LON,),
    "eco_find_locations": (
        LAT_LON,
        _rule("site_codes root", lambda a: _given(a, "root", "site_codes") == 2,
              "spec, Errors: conflicting arguments; root and site_codes both say where to walk"),
        _rule("location_type", lambda a: _absent(a, "location_type") and a.get("site_codes") is None and (
            a.get("root") is None or bool(re.fullmatch(r"(?i)realm|d(0[1-9]|1[0-9]|20)", a["root"].strip()))),
            "spec, eco_find_locations: 'under REALM or a domain location_type is required' (REALM is the default)"),
    ),
    "eco_get_location": (
        _rule("location_type", lambda a: _absent(a, "location_type") and bool(
            re.fullmatch(r"(?i)realm|d(0[1-9]|1[0-9]|20)", str(a.get("name", "")).strip())) and bool(
            {"hierarchy", "children", "all"} & set(a.get("include") or ["properties"])),
            "spec, eco_get_location: location_type is 'required for REALM and domains'"),
    ),
    "eco_get_citation": (
        _rule("product prototype_uuid", lambda a: _given(a, "product", "prototype_uuid") != 1,
              "spec, eco_get_citation: cite a product, or 'a prototype dataset instead'"),
        _rule("provisional release", lambda a: bool(a.get("provisional")) and str(
            a.get("release", "latest")).strip().lower() != "latest",
            "spec: provisional is 'not allowed with an explicit release'"),
        _rule("provisional release", lambda a: _given(a, "prototype_uuid") == 1 and (bool(a.get(
            "provisional")) or str(a.get("release", "latest")).strip().lower() != "latest"),
            "spec: a prototype dataset has its own DOI and version, no release"),
        _rule("accessed_on", lambda a: _not(r"\d{4}-\d{2}-\d{2}")(a.get("accessed_on")) or _bad_date(
            a.get("accessed_on")), "the inputSchema's description: accessed_on is YYYY-MM-DD (a date)"),
        _rule("prototype_uuid", lambda a: _not(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")(
            a.get("prototype_uuid")), "spec, Entities: a prototype dataset is identified by uuid"),
    ),
    "eco_graphql": (
        _rule("query introspect_type", lambda a: _given(a, "query", "introspect_type") != 1,
              "spec, eco_graphql: a query, or one type to introspect"),
        _rule("query", _graphql_refused, "spec, eco_graphql: guard rails checked before the request"),
        _rule("operation_name", lambda a: _given(a, "operation_name") == 1 and a["operation_name"] not in
              _operation_names(a.get("query")),
              "spec: operation_name picks one operation of the query; a name it does not hold is malformed"),
        _rule("operation_name", lambda a: _given(a, "operation_name") == 0 and len(_operation_names(a.get("query")))
              > 1, "the inputSchema's description: operation_name is 'which operation to run when the query "
              "holds several' (without it, which one is ambiguous)"),
    ),
    "eco_get_document": (
        _rule("spec_number url", lambda a: not _given(a, "spec_number", "url"),
              "spec, eco_get_document: a spec_number or a url"),
        _rule("url spec_number", lambda a: _given(a, "url") == 1 and not _same_document(a),
              "spec: url is 'a documents URL on the upstream REST base' (any other is malformed; it must "
              "agree with spec_number)"),
        _rule("pages", lambda a: _given(a, "pages") == 1 and not re.fullmatch(r"1(-1)?", a["pages"].strip()),
              "spec: pages are 'PDF pages such as a range or a single page' of the document: its first page "
              "always exists; whether a later one does depends on the document"),
        _rule("char_offset", lambda a: (a.get("char_offset") or 0) > 0,
              "spec: char_offset continues a text; past its end it is malformed"),
    ),
    "eco_list_files": (MONTH_ORDER, ONE_SITE_MONTH),
    "eco_stack_tables": (
        MONTH_ORDER,
        _rule("dataset_id product site_codes start_month end_month tables release", lambda a: (
            _given(a, "dataset_id") == 1 and _given(a, "product", "site_codes", "start_month", "end_month", "tables",
                                                    "release") > 0),
              "eco_stack_tables: a dataset_id goes alone (it names a dataset an earlier call answered)"),
        _rule("product site_codes start_month", lambda a: (
            _given(a, "dataset_id") == 0 and _given(a, "product", "site_codes", "start_month") < 3),
              "eco_stack_tables: a selection is product, site_codes and start_month (or a dataset_id alone)"),
    ),
    "eco_download_files": (
        MONTH_ORDER, ONE_SITE_MONTH,
        _rule("product prototype_uuid spec_number", lambda a: _given(a, "product", "prototype_uuid",
                                                                     "spec_number") != 1,
              "spec, eco_download_files: data files of a product, a prototype dataset's files, or one document"),
        _rule("file_names", lambda a: _given(a, "file_names") == 1 and not _given(a, "prototype_uuid"),
              "spec: file_names is 'only with prototype_uuid'"),
        _rule("site_codes start_month", lambda a: _given(a, "product") == 1 and _given(
            a, "site_codes", "start_month") < 2, "spec: data files are chosen by product, sites and months"),
    ),
    "eco_get_sample": (
        _rule("sample_tag sample_uuid barcode archive_guid", lambda a: _given(
            a, "sample_tag", "sample_uuid", "barcode", "archive_guid") != 1,
            "spec, eco_get_sample: 'identify by exactly one of tag with optional class, uuid, barcode, archive GUID'"),
        _rule("sample_class", lambda a: _given(a, "sample_class") == 1 and not _given(a, "sample_tag"),
              "spec: the class goes with a tag ('tag with optional class')"),
    ),
    "eco_search_taxonomy": (
        _rule("taxon_type_code", lambda a: bool(a.get("taxon_type_code")) and any(
            a.get(r) for r in ("kingdom", "phylum", "division", "class_", "order", "family", "genus")),
            "spec, eco_search_taxonomy: taxon_type_code 'cannot be combined with any rank filter'"),
    ),
}


# The simulator's REST base as these suites run it (tests/reliability/conftest.py, bench_fuzz.py).
SIM_DOCUMENT_URL = re.compile(r"http://127\.0\.0\.1:\d+/api/v0/documents/([^/?#\\]+)")


def _same_document(args: Args) -> bool:
    """A documents URL on the upstream's REST base, agreeing with spec_number when both are given."""
    found = SIM_DOCUMENT_URL.fullmatch(args["url"].strip())
    return found is not None and args.get("spec_number") in (None, found.group(1))


def _operation_names(query: Any) -> set[str]:
    import graphql

    try:
        doc = graphql.parse(query) if isinstance(query, str) else None
    except graphql.GraphQLError:
        return set()
    return {d.name.value for d in doc.definitions if isinstance(d, graphql.OperationDefinitionNode) and d.name} \
        if doc else set()


def _bad_date(value: Any) -> bool:
    import datetime

    try:
        return isinstance(value, str) and not datetime.date.fromisoformat(value.strip())
    except ValueError:
        return True


# Schema-invalid arguments the spec gives another code than invalid_argument: (field, code) -> when
# the field is the only bad one, and the sentence that says so. The error must still name the field.
ALTERNATIVES: dict[tuple[str, str], tuple[Callable[[Any], bool], str]] = {
    ("site_codes", "query_too_large"): (
        lambda v: isinstance(v, list) and len(v) > 30,
        "spec, Limits: 'Sites per eco_list_files/eco_download_files call: 30' is a tool-level limit "
        "(limits.max_sites_per_call), refused like the site-month limit: query_too_large, 'narrow sites'"),
}


def spec_alternative(case: Case, code: str, properties: Mapping[str, Any]) -> bool:
    if len(case.bad_fields) != 1:
        return False
    (name,) = case.bad_fields
    rule = ALTERNATIVES.get((name, code))
    return rule is not None and rule[0](snake_keys(case.arguments, properties).get(name))


def allowed_invalid_fields(tool: str, args: Args, properties: Mapping[str, Any]) -> set[str]:
    plain = snake_keys(args, properties)
    rules = RULES.get(tool, ()) + tuple(r for r in GENERIC_RULES if set(r.fields) & set(properties))
    return {f for rule in rules if _holds(rule, plain) for f in rule.fields}


def _holds(rule: Rule, args: Args) -> bool:
    # The conditions are about values of the schema's types; a value of another type (an invalid
    # case's) does not meet them.
    try:
        return bool(rule.when(args))
    except (TypeError, AttributeError, ValueError):
        return False
