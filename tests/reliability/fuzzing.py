"""Fuzzed tool arguments, drawn from each tool's published `inputSchema` (what a real MCP client
reads in tools/list), so a tool registered tomorrow is fuzzed without anyone writing a line.

    cases(tools, count, seed, vocabulary) -> [Case(tool, kind, arguments, field, bad_fields), ...]

Valid arguments (valid_arguments) come in four shapes, evenly: any properties with values from
hypothesis-jsonschema's `from_schema` on each property's schema (half of them swapped for a real
value of that property from `vocabulary`, sim_vocabulary.py); real values wherever there are
some; the required properties plus one optional one; and whole argument sets known to work
(vocabulary[tool]: a few seeded, then the nextSteps of earlier successes, see oracle.fuzz_client).
Each case is then one of these kinds:
- `valid`: as drawn.
- `camel_case`: one snake_case key spelled in camelCase (the spec accepts both).
- `hostile`: one string (or one array item) replaced by a hostile string: huge (100 KB),
  RTL/emoji/combining unicode, NUL, path traversal, SQL, shell, CRLF, format strings, GraphQL
  asking for too much (with the code it must get, EXPECTED_CODES). Lone
  surrogates are left out: the SDK client cannot encode them (UTF-8 JSON), so no MCP client can
  send them either ("\\ud800" as text is in).
- `wrong_type`, `out_of_range`, `unknown_key`, `missing_required`: one property made invalid.

Whether a case is valid is decided by validating it against the inputSchema (after turning a
camelCase key back), with patterns read as JSON Schema reads them (ECMA-262: \\d is [0-9]), never
by its kind alone: a hostile string within maxLength is a valid value.

Objects are composed here, property by property, rather than by `from_schema` on the whole
schema: hypothesis-jsonschema 0.23.1's object strategy calls an internal hypothesis API that
hypothesis 6.170 no longer has (`many.more`), and property-level strategies are also much faster
to build. Generation is driven by `@given` with `@seed`, no example database and the generate
phase only, several cases per example (the engine's cost per example is shared), so one seed
always gives the same cases.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jsonschema
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

KINDS = ("valid", "camel_case", "hostile", "wrong_type", "out_of_range", "unknown_key", "missing_required")
INVALID_KINDS = frozenset({"wrong_type", "out_of_range", "unknown_key", "missing_required"})
# Valid arguments are what an agent mostly sends: they take about half of the cases.
KIND_WEIGHTS = {"valid": 8, "camel_case": 2, "hostile": 4, "wrong_type": 2, "out_of_range": 2,
                "unknown_key": 1, "missing_required": 1}

HUGE = 100_000
# GraphQL that asks for too much, small as text: 400 aliased copies of the product list through a
# fragment (7.5 KB), and whole-catalog lists nested three deep. eco_graphql must refuse both as
# query_too_large before sending (EXPECTED_CODES; they once stalled the whole server).
GRAPHQL_ALIASES = "{" + "".join(f"a{i}:products{{...F}}" for i in range(400)) + "}fragment F on DataProduct{productCode productName}"
GRAPHQL_HUGE_ESTIMATE = "{sites{dataProducts{availableMonths availableDataUrls availableReleases{availableMonths}}}}"
# (tool, property, hostile value) -> the only right answer, and the inputs that must be absent for
# it to be (they bring rules of their own: introspect_type excludes query, operation_name must
# name an operation of it).
EXPECTED_CODES: dict[tuple[str, str, str], tuple[str, tuple[str, ...]]] = {
    ("eco_graphql", "query", GRAPHQL_ALIASES): ("query_too_large", ("introspect_type", "operation_name")),
    ("eco_graphql", "query", GRAPHQL_HUGE_ESTIMATE): ("query_too_large", ("introspect_type", "operation_name")),
}
HOSTILE_STRINGS: tuple[str, ...] = (
    "A" * HUGE,
    "\u00e9\u0301" * (HUGE // 4),  # combining accents, 100 KB of UTF-8
    "\u202eevil\u202c", "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",  # RTL override, Hebrew, Arabic
    "\U0001f989\U0001f332\U0001f9ea", "\U0001f469\u200d\U0001f52c", "\ufeffBOM", "\u200b\u200c\u200d",
    "\ud7ff\ue000\ufffd\uffff\U0010ffff", "\\ud800\\udfff",  # around the surrogates; escapes as text
    "\x00", "HARV\x00", "a\x00b\x00../x",
    "../../etc/passwd", "..\\..\\windows\\win.ini", "/etc/passwd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "....//....//etc/passwd", "./././.", "..", "~/.ssh/id_rsa", "file:///etc/passwd",
    "' OR 1=1 --", "\"; DROP TABLE catalog_productrow; --", "1) UNION SELECT NULL--", "%' AND SLEEP(5) --",
    "$(rm -rf /)", "`rm -rf /`", "; cat /etc/passwd", "| id", "&& shutdown -h now",
    "a\r\nX-Injected: 1", "\r\n\r\n", "line1\nline2", "\t",
    "%s%s%s%n", "%x%x%x", "{0}{1}", "{__class__.__mro__}", "%(x)s", "${jndi:ldap://x/a}", "{{7*7}}",
    "<script>alert(1)</script>", "]]>", "\\", "\"", "'", "", " ", "null", "None", "NaN", "-1", "0" * 40,
    "DP1.00041.001' OR '1'='1", "RELEASE-2023\r\n", "latest\x00", "REALM/../../..",
    GRAPHQL_ALIASES, GRAPHQL_HUGE_ESTIMATE,
)
# Keys no tool can accept, including hostile ones: an unknown key is always `invalid_argument`.
UNKNOWN_KEYS: tuple[str, ...] = (
    "zz_unknown", "verbose_mode", "apiToken", "../../etc/passwd", "' OR 1=1 --", "$(rm -rf /)", "a\r\nb",
    "%s%n", "\U0001f989", "\u202eyek", "__proto__", "constructor", "", " ", "\x00",
)
JSON_OF_TYPE: dict[str, tuple[Any, ...]] = {
    "string": ("5", "true", "", "null", "[]"),
    "integer": (7, 0, -1, 2**63),
    "number": (2.5, -0.5, 1e308),  # never integral: JSON Schema counts 5.0 as an integer
    "boolean": (True, False),
    "array": (["x"], [], [1, 2]),
    "object": ({"a": 1}, {}),
    "null": (None,),
}
PATTERN_MISSES: tuple[str, ...] = ("2023-13", "2023-1", "23-01", "D21", "d00", "ABC", "A1", "x", "2023-00",
                                  "12345678-1234-1234-1234-12345678901g", "HARV1", "1abc", "a b", "-")


def expected_code(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """The one error code EXPECTED_CODES allows for these arguments, if any."""
    for (name, prop, value), (code, absent) in EXPECTED_CODES.items():
        if name == tool and arguments.get(prop, arguments.get(camel(prop))) == value and all(
                arguments.get(a, arguments.get(camel(a))) is None for a in absent):
            return code
    return None


@dataclass(frozen=True)
class Case:
    tool: str
    kind: str
    arguments: dict[str, Any]
    field: str | None  # the property or key a mutation touched
    bad_fields: tuple[str, ...]  # what makes the arguments invalid (see invalid_fields); () when valid

    @property
    def valid(self) -> bool:
        return not self.bad_fields


def camel(name: str) -> str:
    """The camelCase spelling of a snake_case name; a trailing underscore (`class_`, kept off a
    reserved word) stays, so such a name has no other spelling."""
    head, *rest = name.split("_")
    if rest and not rest[-1]:
        return name
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def snake_keys(arguments: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with each camelCase spelling of a property turned back to its name."""
    back = {camel(p): p for p in properties}
    return {k if k in properties else back.get(k, k): v for k, v in arguments.items()}


def invalid_fields(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys an error about these arguments may name: unknown keys, missing required properties
    and properties whose value breaks their schema. Empty when the arguments are valid."""
    properties = schema.get("properties", {})
    plain = snake_keys(arguments, properties)
    bad = {k for k in plain if k not in properties}
    bad |= {r for r in schema.get("required", ()) if r not in plain}
    errors = _validator(json.dumps({**schema, "required": []}, sort_keys=True)).iter_errors(
        {k: v for k, v in plain.items() if k in properties})
    bad |= {str(e.path[0]) for e in errors if e.path}
    return tuple(sorted(bad))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    # JSON Schema patterns are ECMA-262 regular expressions, where \d is [0-9]; Python's re
    # would also take other scripts' digits ("२०२३-०१" as a month).
    if validator.is_type(instance, "string") and not re.search(pattern, instance, re.ASCII):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})


@cache
def _validator(schema_text: str) -> Any:
    return Validator(json.loads(schema_text))


def json_types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a property schema allows (through `type` and `anyOf` branches)."""
    if "anyOf" in schema:
        return set().union(*(json_types(b) for b in schema["anyOf"]))
    declared = schema.get("type")
    if declared is None:
        return {"string"} if "enum" in schema else set(JSON_OF_TYPE)
    types = {declared} if isinstance(declared, str) else set(declared)
    return types | ({"integer"} if "number" in types else set())


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(max_size=8), inner, max_size=3), max_leaves=6)


def value_strategy(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values of one property schema. Free-form objects are drawn here (see module note)."""
    if "anyOf" in schema:
        return st.one_of([value_strategy(b) for b in schema["anyOf"]])
    types = json_types(schema)
    parts: list[st.SearchStrategy[Any]] = []
    if "object" in types:
        parts.append(st.dictionaries(st.text(max_size=12), _json_values(), max_size=4))
        types.discard("object")
    if types:
        declared = schema.get("type")
        rest = [t for t in ([declared] if isinstance(declared, str) else declared or []) if t != "object"]
        parts.append(from_schema({**schema, **({"type": rest} if declared else {})}))
    return st.one_of(parts)


def _fits(value: Any, schema: Mapping[str, Any]) -> bool:
    return _validator(json.dumps(schema, sort_keys=True)).is_valid(value)


def property_strategy(name: str, schema: Mapping[str, Any], real: Sequence[Any], only_real: bool = False
                      ) -> st.SearchStrategy[Any]:
    """Schema values, or (half of the time, or always with `only_real`) a real value of this
    property that fits; schema values alone when there is none."""
    base = value_strategy(schema)
    known = [v for v in real if _fits(v, schema)]
    if "array" in json_types(schema):
        items = [v for v in real if isinstance(v, str)]
        lists = [[a] for a in items] + [items[i:i + 3] for i in range(0, len(items), 3)]
        known += [v for v in lists if _fits(v, schema)]
    if known and only_real:
        return st.sampled_from(known)
    return st.one_of(base, st.sampled_from(known)) if known else base


def valid_arguments(tool: str, schema: Mapping[str, Any], vocabulary: Mapping[str, Sequence[Any]]
                    ) -> st.SearchStrategy[dict[str, Any]]:
    """Three shapes, evenly: any schema values (each maybe a real one) for any properties; real
    values wherever the vocabulary has some; the required properties plus one optional one, with
    real values (a tool whose inputs exclude each other, 'exactly one of', mostly gets this one
    right). The last two let hostile and invalid mutations reach past name resolution."""
    properties = schema.get("properties", {})
    required = [n for n in properties if n in set(schema.get("required", ()))]
    optional = [n for n in properties if n not in required]
    real = {n: vocabulary.get(f"{tool}.{n}", vocabulary.get(n, ())) for n in properties}
    mixed = {n: property_strategy(n, s, real[n]) for n, s in properties.items()}
    realistic = {n: property_strategy(n, s, real[n], only_real=True) for n, s in properties.items()}
    shapes = [st.fixed_dictionaries({n: s for n, s in strategies.items() if n in required},
                                    optional={n: s for n, s in strategies.items() if n not in required})
              for strategies in (mixed, realistic)]
    if optional:
        base = st.fixed_dictionaries({n: realistic[n] for n in required})
        shapes.append(st.tuples(base, st.sampled_from(optional)).flatmap(
            lambda pair: realistic[pair[1]].map(lambda value: {**pair[0], pair[1]: value})))
    # Whole argument sets known to work (vocabulary[tool]: e.g. what other tools' nextSteps proposed).
    examples = [dict(e) for e in vocabulary.get(tool, ()) if not invalid_fields(e, schema)]
    if examples:
        shapes.append(st.sampled_from(examples).map(dict))
    return st.one_of(shapes)


def _out_of_range(schema: Mapping[str, Any]) -> list[Any]:
    """Values of the property's own type that break one of its bounds."""
    if "anyOf" in schema:
        return [v for b in schema["anyOf"] for v in _out_of_range(b)]
    out: list[Any] = []
    types = json_types(schema)
    number = "number" in types
    if "minimum" in schema:
        out += [schema["minimum"] - (0.5 if number else 1), -(2**63)]
    if "exclusiveMinimum" in schema:
        out += [schema["exclusiveMinimum"], schema["exclusiveMinimum"] - 1]
    if "maximum" in schema:
        out += [schema["maximum"] + (0.5 if number else 1), 10**30]
    if "maxLength" in schema:
        out += ["x" * (schema["maxLength"] + 1)]
    if schema.get("minLength", 0) > 0:
        out += [""]
    if "enum" in schema:
        out += ["NOT_A_MEMBER", str(schema["enum"][0]).lower() + "x", ""]
    if "pattern" in schema:
        out += [s for s in PATTERN_MISSES if not re.search(schema["pattern"], s)]
    if "maxItems" in schema:
        out += [[f"X{i:03d}" for i in range(schema["maxItems"] + 1)]]
    if schema.get("minItems", 0) > 0:
        out += [[]]
    if "items" in schema:
        out += [[v] for v in _out_of_range(schema["items"]) if not isinstance(v, list)][:3]
    return [v for v in out if not _fits(v, schema)]


def _wrong_types(schema: Mapping[str, Any]) -> list[Any]:
    allowed = json_types(schema)
    values = [v for t, vs in JSON_OF_TYPE.items() if t not in allowed for v in vs]
    return [v for v in values if not _fits(v, schema)]


def _stringy(schema: Mapping[str, Any]) -> str | None:
    """'string' when the property takes free strings, 'array' when its items do, else None."""
    free = {k: v for k, v in schema.items() if k != "anyOf"}
    if "string" in json_types(free) and "enum" not in free and "pattern" not in free:
        return "string"
    if "array" in json_types(schema) and "string" in json_types(schema.get("items", {})):
        return "array"
    return None


class ToolCases:
    """Everything about one tool's inputSchema the cases need, worked out once: building
    `from_schema` strategies is far slower than drawing from them."""

    def __init__(self, name: str, schema: Mapping[str, Any], vocabulary: Mapping[str, Sequence[Any]]) -> None:
        self.name, self.schema = name, schema
        self.properties: dict[str, Any] = dict(schema.get("properties", {}))
        self.required = list(schema.get("required", ()))
        self.valid_args = valid_arguments(name, schema, vocabulary)
        self.stringy = sorted(p for p, s in self.properties.items() if _stringy(s))
        self.wrong = {p: v for p, s in self.properties.items() if (v := _wrong_types(s))}
        self.out_of_range = {p: v for p, s in self.properties.items() if (v := _out_of_range(s))}
        known = set(self.properties) | {camel(p) for p in self.properties}
        self.unknown_keys = [k for k in UNKNOWN_KEYS if k not in known]
        possible = {"valid": True, "camel_case": any(camel(p) != p for p in self.properties),
                    "hostile": bool(self.stringy), "wrong_type": bool(self.wrong),
                    "out_of_range": bool(self.out_of_range), "unknown_key": True,
                    "missing_required": bool(self.required)}
        self.kinds = [k for k in KINDS if possible[k] for _ in range(KIND_WEIGHTS[k])]
        self.strategy = self._case()

    def _case(self) -> st.SearchStrategy[Case]:
        @st.composite
        def draw_case(draw: st.DrawFn) -> Case:
            args = draw(self.valid_args)
            kind = draw(st.sampled_from(self.kinds))
            field: str | None = None
            renamable = sorted(k for k in args if camel(k) != k)
            if kind == "camel_case" and not renamable:
                kind = "valid"  # the drawn arguments hold no snake_case key to rename
            if kind == "camel_case":
                field = draw(st.sampled_from(renamable))
                args[camel(field)] = args.pop(field)
            elif kind == "hostile":
                field = draw(st.sampled_from(self.stringy))
                bad = draw(st.sampled_from(HOSTILE_STRINGS))
                args[field] = bad if _stringy(self.properties[field]) == "string" else [bad]
            elif kind in ("wrong_type", "out_of_range"):
                table = self.wrong if kind == "wrong_type" else self.out_of_range
                field = draw(st.sampled_from(sorted(table)))
                args[field] = draw(st.sampled_from(table[field]))
            elif kind == "unknown_key":
                field = draw(st.sampled_from(self.unknown_keys))
                args[field] = draw(st.sampled_from([v for vs in JSON_OF_TYPE.values() for v in vs]))
            elif kind == "missing_required":
                field = draw(st.sampled_from(self.required))
                args.pop(field, None)
            return Case(self.name, kind, args, field, invalid_fields(args, self.schema))

        return draw_case()


def cases(tools: Mapping[str, Mapping[str, Any]], count: int, seed_value: int,
          vocabulary: Mapping[str, Sequence[Any]] | None = None) -> list[Case]:
    """`count` cases shared evenly by the tools (`tools` maps name -> inputSchema), in a seeded
    shuffled order: the same cases for the same tools, seed and vocabulary."""
    names = sorted(tools)
    drawn: list[Case] = []
    for i, name in enumerate(names):
        share = count // len(names) + (1 if i < count % len(names) else 0)
        drawn += _draw(ToolCases(name, tools[name], vocabulary or {}).strategy, share, seed_value + i)
    random.Random(seed_value).shuffle(drawn)
    return drawn


PER_EXAMPLE = 10  # cases drawn by one hypothesis example: the engine's cost per example is shared


def _draw(strategy: st.SearchStrategy[Case], count: int, seed_value: int) -> list[Case]:
    drawn: list[Case] = []

    examples = [0]

    # One example more than needed: hypothesis starts with the simplest example of all (every
    # draw its minimal value, so all its cases alike), which is skipped.
    @settings(max_examples=1 + -(-count // PER_EXAMPLE), database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(seed_value)
    @given(st.data())
    def collect(data: st.DataObject) -> None:
        examples[0] += 1
        for _ in range(PER_EXAMPLE):
            case = data.draw(strategy)
            if examples[0] > 1 and len(drawn) < count:
                drawn.append(case)

    collect()
    # Hypothesis stops early once a small input space is exhausted (eco_ping has few distinct
    # cases): the share is kept by repeating them, which also calls the tool warm.
    return [drawn[i % len(drawn)] for i in range(count)] if drawn else []
