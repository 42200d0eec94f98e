"""The fuzzing's judge and generator, without a server: the oracle fails the answers it must fail
(so a green fuzz run means something), and the cases are what their kind says, the same for the
same seed."""

from __future__ import annotations

import mcp_types as types
import pytest

from tests.reliability.fuzzing import (
    GRAPHQL_ALIASES,
    GRAPHQL_HUGE_ESTIMATE,
    HOSTILE_STRINGS,
    camel,
    cases,
    invalid_fields,
)
from tests.reliability.oracle import allowed_invalid_fields, judge_result

SCHEMA = {"type": "object", "required": ["product"], "properties": {
    "product": {"type": "string", "maxLength": 300},
    "site": {"type": ["string", "null"], "maxLength": 200},
    "start_month": {"type": ["string", "null"], "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])$"},
    "end_month": {"type": ["string", "null"], "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])$"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 25},
}}
OUTPUT = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array"}}}


class Tool:
    name = "eco_get_availability"
    input_schema = SCHEMA
    output_schema = OUTPUT


def _ok(body):
    return types.CallToolResult(content=[], structured_content=body, is_error=False)


def _error(code, message="", **details):
    return types.CallToolResult(content=[], is_error=True, structured_content={
        "error": {"code": code, "message": message, "details": details, "hint": ""}})


def _case(arguments, kind="valid", field=None):
    from tests.reliability.fuzzing import Case

    return Case(Tool.name, kind, arguments, field, invalid_fields(arguments, SCHEMA))


VALID = _case({"product": "DP1.00041.001"})
WRONG_TYPE = _case({"product": "DP1.00041.001", "limit": "5"}, "wrong_type", "limit")
# Schema-valid, but the window ends before it starts: a rule the spec states (oracle.MONTH_ORDER).
BACKWARDS = _case({"product": "DP1.00041.001", "start_month": "2024-05", "end_month": "2024-01"})


@pytest.mark.parametrize(("case", "result", "problem"), [
    (VALID, _error("internal_error", "an internal error occurred (correlation id 0a1b)"), "internal_error"),
    (VALID, _error("unknown_tool"), "unknown_tool"),
    (VALID, _error("teapot"), "not in the spec's Errors table"),
    (VALID, _ok({"items": "not a list"}), "outputSchema"),
    (VALID, _error("invalid_argument", "product: nope", field="product"), "no spec rule applies"),
    (WRONG_TYPE, _ok({"items": []}), "were accepted"),
    (WRONG_TYPE, _error("not_found", "limit"), "not invalid_argument"),
    (WRONG_TYPE, _error("invalid_argument", "product: bad", field="product"), "names none of the invalid fields"),
    (BACKWARDS, _error("invalid_argument", "site: x", field="site"), "names none of the fields its rules allow"),
])
def test_the_oracle_fails_every_answer_the_spec_does_not_allow(case, result, problem):
    verdict = judge_result(case, Tool, result)
    assert verdict.problem is not None and problem in verdict.problem, verdict


@pytest.mark.parametrize(("case", "result"), [
    (VALID, _ok({"items": []})),
    (VALID, _error("not_found", "product: no such product")),
    (WRONG_TYPE, _error("invalid_argument", "argument 'limit': Input should be a valid integer", field="limit")),
    (BACKWARDS, _error("invalid_argument", "start_month: 2024-05 is after end_month 2024-01", field="start_month")),
])
def test_the_oracle_passes_what_the_spec_allows(case, result):
    verdict = judge_result(case, Tool, result)
    assert verdict.problem is None, verdict
    assert allowed_invalid_fields(Tool.name, BACKWARDS.arguments, SCHEMA["properties"]) == {"start_month", "end_month"}


def test_cases_are_the_same_for_a_seed_and_each_kind_is_what_it_says():
    tools = {"eco_a": SCHEMA, "eco_b": {"type": "object", "properties": {"check_api": {"type": "boolean"}}}}
    first, again, other = cases(tools, 120, 5, {}), cases(tools, 120, 5, {}), cases(tools, 120, 6, {})
    assert [(c.tool, c.arguments) for c in first] == [(c.tool, c.arguments) for c in again]
    assert [(c.tool, c.arguments) for c in first] != [(c.tool, c.arguments) for c in other]
    kinds = {c.kind for c in first}
    assert {"valid", "hostile", "wrong_type", "out_of_range", "unknown_key", "missing_required"} <= kinds
    for c in first:
        if c.kind in ("wrong_type", "out_of_range", "unknown_key", "missing_required"):
            assert c.field in c.bad_fields, c
        if c.kind in ("valid", "camel_case"):
            assert c.valid, c
    hostile = [c for c in first if c.kind == "hostile"]
    assert hostile and all(c.arguments[c.field] in HOSTILE_STRINGS for c in hostile if c.field in c.arguments)


def test_a_month_in_other_digits_is_invalid_as_json_schema_reads_the_pattern():
    assert invalid_fields({"product": "x", "start_month": "\u0968\u0966\u0968\u0969-01"}, SCHEMA) == ("start_month",)
    assert invalid_fields({"product": "x", "startMonth": "2023-01"}, SCHEMA) == ()
    assert camel("start_month") == "startMonth" and camel("class_") == "class_"


class GraphQLTool:
    name = "eco_graphql"
    input_schema = {"type": "object", "properties": {"query": {"type": ["string", "null"], "maxLength": 1_000_000},
                                                     "operation_name": {"type": ["string", "null"]}}}
    output_schema = OUTPUT


@pytest.mark.parametrize("query", [GRAPHQL_ALIASES, GRAPHQL_HUGE_ESTIMATE])
def test_graphql_that_asks_for_too_much_must_be_query_too_large(query):
    from tests.reliability.fuzzing import Case

    case = Case("eco_graphql", "hostile", {"query": query}, "query", ())
    for wrong in (_ok({"items": []}), _error("upstream_unavailable", "deadline"), _error("invalid_argument", "query")):
        verdict = judge_result(case, GraphQLTool, wrong)
        assert verdict.problem is not None and "must be query_too_large" in verdict.problem, verdict
    assert judge_result(case, GraphQLTool, _error("query_too_large", "query: too many aliases")).problem is None
    # With an operation_name its own rule may answer first: no single code is expected then.
    named = Case("eco_graphql", "hostile", {"query": query, "operation_name": "X"}, "query", ())
    assert judge_result(named, GraphQLTool, _error("invalid_argument", "operation_name: X",
                                                   field="operation_name")).problem is None
