"""The judge of every fuzzed answer, and the loop that sends the cases through one MCP client.

An answer passes when it is
- a success whose structuredContent validates against the tool's published outputSchema, for
  arguments that are valid; or
- an error result whose code is in the spec's Errors table and is not `internal_error`. Valid
  arguments may get `invalid_argument` only where a rule below (a cross-field or format rule the
  spec states and the schema cannot express) applies, and the error must name that rule's field;
  invalid arguments must get `invalid_argument` naming the field that was made invalid.
Anything else fails: a JSON-RPC error (-32603 or any other), an HTTP error (5xx), a client-side
exception, or no answer within the per-call bound (a hang).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from tests.reliability.fuzzing import Case, snake_keys

# The spec's "Errors" table (observatory-mcp-spec.md), copied rather than imported from the
# product: a code the product invented must fail here.
SPEC_ERROR_CODES = frozenset({
    "invalid_argument", "not_found", "ambiguous_input", "auth_required", "forbidden", "rate_limited",
    "upstream_error", "upstream_unavailable", "graphql_error", "query_too_large", "download_limit_exceeded",
    "download_denied", "checksum_mismatch", "result_too_large", "feature_unavailable",
    "not_available_in_http_mode", "catalog_unavailable", "unknown_tool", "internal_error",
})
# In the table, but never a right answer to a call of a listed tool.
NEVER = frozenset({"internal_error", "unknown_tool"})
CALL_TIMEOUT_S = 30.0

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
GENERIC_RULES = (
    *(_rule(f, (lambda args, f=f: _blank(args.get(f))), MISSING) for f in RESOLVED_NAMES),
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
        _rule("operation_name", lambda a: _given(a, "operation_name") == 1,
              "spec: operation_name picks one operation of the query; a name it does not hold is malformed"),
    ),
    "eco_get_document": (
        _rule("spec_number url", lambda a: not _given(a, "spec_number", "url"),
              "spec, eco_get_document: a spec_number or a url"),
        _rule("url spec_number", lambda a: _given(a, "url") == 1,
              "spec: url is 'a documents URL on the upstream REST base' (any other is malformed; it must "
              "agree with spec_number)"),
        _rule("pages", lambda a: _given(a, "pages") == 1,
              "spec: pages are 'PDF pages such as a range or a single page' of the document"),
        _rule("char_offset", lambda a: (a.get("char_offset") or 0) > 0,
              "spec: char_offset continues a text; past its end it is malformed"),
    ),
    "eco_list_files": (MONTH_ORDER, ONE_SITE_MONTH),
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


def _spec_alternative(case: Case, code: str, properties: Mapping[str, Any]) -> bool:
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


@dataclass
class Verdict:
    outcome: str  # "success", an error code, or "jsonrpc:<code>", "exception:<type>", "timeout"
    problem: str | None  # None when the answer passes
    answer: str


def _names(err: Mapping[str, Any], fields: Iterable[str]) -> bool:
    """The error names one of `fields`: in its message, details.field or details.errors."""
    details = err.get("details") or {}
    named = {str(details.get("field", ""))} | {str(e.get("field", "")) for e in details.get("errors", ())
                                               if isinstance(e, Mapping)}
    message = str(err.get("message", ""))
    # A blank key ("" or " ") is in every message: only details can name it.
    return any((f.strip() and f in message) or any(n == f or n.startswith(f + ".") for n in named) for f in fields)


@functools.cache
def _output_validator(schema_text: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema_text))


def judge_result(case: Case, tool: Any, result: Any) -> Verdict:
    """`tool` is the tools/list entry (inputSchema, outputSchema); `result` a CallToolResult."""
    body = result.structured_content
    verdict = _judge(case, tool, result, body)
    if verdict.problem is not None:
        verdict.answer = _short(body if body is not None else [c.model_dump() for c in result.content])
    return verdict


def _judge(case: Case, tool: Any, result: Any, body: Any) -> Verdict:
    answer = ""
    if not result.is_error:
        if not case.valid:
            return Verdict("success", f"schema-invalid arguments ({case.kind} {case.field!r}) were accepted", answer)
        try:
            _output_validator(json.dumps(tool.output_schema, sort_keys=True)).validate(body)
        except jsonschema.ValidationError as exc:
            return Verdict("success", f"structuredContent breaks the outputSchema: {exc.message[:300]}", answer)
        return Verdict("success", None, answer)
    err = (body or {}).get("error") if isinstance(body, Mapping) else None
    if not isinstance(err, Mapping) or not isinstance(err.get("code"), str):
        return Verdict("malformed-error", "error result without structuredContent.error.code", answer)
    code = err["code"]
    if code not in SPEC_ERROR_CODES:
        return Verdict(code, f"code {code!r} is not in the spec's Errors table", answer)
    if code in NEVER:
        return Verdict(code, f"{code} for a listed tool", answer)
    if not case.valid:
        if _spec_alternative(case, code, tool.input_schema.get("properties", {})) and _names(err, case.bad_fields):
            return Verdict(code, None, answer)
        if code != "invalid_argument":
            return Verdict(code, f"schema-invalid arguments ({case.kind} {case.field!r}) gave {code}, "
                           "not invalid_argument", answer)
        # A bound the service checks after its cross-field rules (site_codes' 30, from configuration)
        # can be preceded by one of them: naming a field a spec rule refuses is as right.
        ruled = allowed_invalid_fields(case.tool, case.arguments, tool.input_schema.get("properties", {}))
        if not _names(err, case.bad_fields) and not (ruled and _names(err, ruled)):
            return Verdict(code, f"invalid_argument names none of the invalid fields {list(case.bad_fields)}", answer)
        return Verdict(code, None, answer)
    if code == "invalid_argument":
        allowed = allowed_invalid_fields(case.tool, case.arguments, tool.input_schema.get("properties", {}))
        if not allowed:
            return Verdict(code, "invalid_argument for schema-valid arguments, and no spec rule applies", answer)
        if not _names(err, allowed):
            return Verdict(code, f"invalid_argument names none of the fields its rules allow: {sorted(allowed)}",
                           answer)
    return Verdict(code, None, answer)


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def save_report(tally: Tally, label: str) -> None:
    """With ECO_FUZZ_REPORT=<folder>, every failure of a run is written to <folder>/<label>.txt."""
    import os
    from pathlib import Path

    folder = os.environ.get("ECO_FUZZ_REPORT")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{label}.txt").write_text(tally.report(most=len(tally.failures)))


def short_arguments(args: Args, limit: int = 400) -> str:
    """The arguments for a report, each string cut to 60 characters (a 100 KB string included)."""
    def cut(v: Any) -> Any:
        if isinstance(v, str) and len(v) > 60:
            return v[:60] + f"...({len(v)} chars)"
        if isinstance(v, list):
            return [cut(x) for x in v[:5]] + (["..."] if len(v) > 5 else [])
        return v
    return _short({k: cut(v) for k, v in args.items()}, limit)


@dataclass
class Failure:
    seed: int
    case: Case
    verdict: Verdict
    log: str = ""

    def __str__(self) -> str:
        text = (f"[seed {self.seed}] {self.case.tool} {self.case.kind}({self.case.field!r}) "
                f"args={short_arguments(self.case.arguments)}\n    -> {self.verdict.outcome}: {self.verdict.problem}"
                f"\n    answer: {self.verdict.answer}")
        return text + (f"\n    server log:\n{self.log}" if self.log else "")


@dataclass
class Tally:
    calls: int = 0
    seconds: float = 0.0
    by_tool: Counter[str] = field(default_factory=Counter)
    by_outcome: Counter[str] = field(default_factory=Counter)
    by_tool_kind: Counter[tuple[str, str]] = field(default_factory=Counter)
    seconds_by_tool: Counter[str] = field(default_factory=Counter)  # summed call latency
    by_tool_outcome: Counter[tuple[str, str]] = field(default_factory=Counter)
    # The arguments successful answers proposed in nextSteps, by tool: valid calls for later seeds.
    next_steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def report(self, most: int = 40) -> str:
        shown = "\n".join(str(f) for f in self.failures[:most])
        more = f"\n... and {len(self.failures) - most} more" if len(self.failures) > most else ""
        return f"{len(self.failures)} of {self.calls} fuzzed calls failed:\n{shown}{more}"


Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def run_cases(call: Call, tools: Mapping[str, Any], cases: Iterable[Case], *, seed: int, tally: Tally,
                    concurrency: int = 4, timeout_s: float = CALL_TIMEOUT_S,
                    log_of: Callable[[str], str] | None = None) -> Tally:
    """Send every case through `call(name, arguments)` (one client session), `concurrency` in
    flight, each bounded by `timeout_s`; judge each answer into `tally`."""
    queue = list(cases)
    started = time.perf_counter()

    async def one(case: Case) -> None:
        t0 = time.perf_counter()
        try:
            result = await asyncio.wait_for(call(case.tool, case.arguments), timeout_s)
        except TimeoutError:
            verdict = Verdict("timeout", f"no answer within {timeout_s:.0f} s", "")
        except Exception as exc:  # every other way a call can fail is a finding, reported with the rest
            error = getattr(exc, "error", None)
            outcome = f"jsonrpc:{error.code}" if error is not None and hasattr(error, "code") else \
                f"exception:{type(exc).__name__}"
            verdict = Verdict(outcome, f"{type(exc).__name__}: {str(exc)[:300]}", _short(getattr(error, "data", None)))
        else:  # judged outside the handlers: a bug of the judge is not the service's
            verdict = judge_result(case, tools[case.tool], result)
            if verdict.outcome == "success" and verdict.problem is None:
                _learn(tally, result.structured_content)
        tally.calls += 1
        tally.seconds_by_tool[case.tool] += time.perf_counter() - t0
        tally.by_tool[case.tool] += 1
        tally.by_outcome[verdict.outcome] += 1
        tally.by_tool_outcome[(case.tool, verdict.outcome)] += 1
        tally.by_tool_kind[(case.tool, case.kind)] += 1
        if verdict.problem is not None:
            cid = re.search(r"correlation id ([0-9a-f]+)", verdict.answer)  # internal_error: its log lines
            log = log_of(cid.group(1)) if cid and log_of else ""
            tally.failures.append(Failure(seed, case, verdict, log))

    async def worker() -> None:
        while queue:
            await one(queue.pop(0))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    tally.seconds += time.perf_counter() - started
    return tally


def _learn(tally: Tally, body: Mapping[str, Any]) -> None:
    for step in body.get("nextSteps") or ():
        known = tally.next_steps.setdefault(step["tool"], [])
        if step["arguments"] not in known and len(known) < 50:
            known.append(step["arguments"])


def rotating_seed() -> int:
    """ECO_FUZZ_SEED when set (to replay a failure), else today's date: each day fuzzes anew."""
    import datetime
    import os

    return int(os.environ.get("ECO_FUZZ_SEED") or datetime.date.today().strftime("%Y%m%d"))


async def fuzz_client(client: Any, plan: Iterable[tuple[int, int]], vocabulary: Mapping[str, Any], *,
                      concurrency: int = 4, log_of: Callable[[str], str] | None = None) -> tuple[Tally, set[str]]:
    """Fuzz every tool `client` lists: for each (seed, count) of `plan`, `count` cases shared by
    the tools; each seed's cases also mutate the argument sets the earlier seeds' successes
    proposed in nextSteps (so calls reach deeper as the run goes on). Returns the tally and the
    names of the tools listed."""
    from tests.reliability.fuzzing import cases

    tools = {t.name: t for t in (await client.list_tools()).tools}
    schemas = {name: t.input_schema for name, t in tools.items()}
    tally = Tally()
    for seed, count in plan:
        learned = {tool: [*vocabulary.get(tool, ()), *steps] for tool, steps in tally.next_steps.items()}
        await run_cases(client.call_tool, tools, cases(schemas, count, seed, {**vocabulary, **learned}), seed=seed,
                        tally=tally, concurrency=concurrency, log_of=log_of)
    return tally, set(tools)
