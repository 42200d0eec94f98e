"""The judge of every fuzzed answer, and the loop that sends the cases through one MCP client.

An answer passes when it is
- a success whose structuredContent validates against the tool's published outputSchema, for
  arguments that are valid; or
- an error result whose code is in the spec's Errors table and is not `internal_error`. Valid
  arguments may get `invalid_argument` only where a rule of spec_rules.py (a cross-field or format
  rule the spec states and the schema cannot express) applies, and the error must name that rule's
  field; invalid arguments must get `invalid_argument` (or spec_rules.ALTERNATIVES' code) naming a
  field that makes them invalid.
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

from tests.reliability.fuzzing import Case, expected_code
from tests.reliability.spec_rules import allowed_invalid_fields, spec_alternative

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
# A hang is a call with no answer in this long: the service's own bound on a call's upstream time
# (eco.call_deadline_s, 30 s by default, then upstream_unavailable) plus room for the work around
# it on a loaded machine. A bound at 30 s would race the service's deadline and call its answer a hang.
CALL_TIMEOUT_S = 45.0


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


def judge_result(case: Case, tool: Any, result: Any, *, output_checked: bool = False) -> Verdict:
    """`tool` is the tools/list entry (inputSchema, outputSchema); `result` a CallToolResult.
    `output_checked`: the caller already validated a success against the outputSchema."""
    body = result.structured_content
    verdict = _judge(case, tool, result, body, output_checked)
    if verdict.problem is not None:
        verdict.answer = _short(body if body is not None else [c.model_dump() for c in result.content])
    return verdict


def _judge(case: Case, tool: Any, result: Any, body: Any, output_checked: bool) -> Verdict:
    answer = ""
    expected = expected_code(case.tool, case.arguments) if case.valid else None
    if expected is not None:
        err = (body or {}).get("error") if result.is_error and isinstance(body, Mapping) else None
        code = err.get("code") if isinstance(err, Mapping) else "success"
        return Verdict(str(code), None if code == expected else f"{case.kind} {case.field!r} must be {expected}, "
                       f"not {code}", answer)
    if not result.is_error:
        if not case.valid:
            return Verdict("success", f"schema-invalid arguments ({case.kind} {case.field!r}) were accepted", answer)
        try:
            if not output_checked:
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
        if spec_alternative(case, code, tool.input_schema.get("properties", {})) and _names(err, case.bad_fields):
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


def short_arguments(args: Mapping[str, Any], limit: int = 400) -> str:
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
                    log_of: Callable[[str], str] | None = None, output_checked: bool = False) -> Tally:
    """Send every case through `call(name, arguments)` (one client session), `concurrency` in
    flight, each bounded by `timeout_s`; judge each answer into `tally`. `output_checked`: `call`
    validates successes against the outputSchema itself (raising, which is a failure here)."""
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
            verdict = judge_result(case, tools[case.tool], result, output_checked=output_checked)
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
        # The SDK's Client.call_tool validates every success against the outputSchema it listed
        # (mcp.client.session.validate_tool_result) and raises on a mismatch: checked once, there.
        await run_cases(client.call_tool, tools, cases(schemas, count, seed, {**vocabulary, **learned}), seed=seed,
                        tally=tally, concurrency=concurrency, log_of=log_of, output_checked=True)
    return tally, set(tools)
