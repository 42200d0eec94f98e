"""The unit of each result column of a query, derived from the query DuckDB parsed (its
`json_serialize_sql` tree) and the units NEON's variables file gives the dataset's columns.

    derive(node, relations) -> Derivation          pure: no engine, no dataset on disk
    Derivation.for_columns(names) -> [Derived]     one per result column, in order

The rules, so that an answer's number carries its unit only where the unit follows from the SQL:
a column keeps its unit, renamed or not; so do min, max, avg, sum, median, quantile, stddev, first,
last and any_value of it (and the like: round, abs, a window's avg); a sum or difference of
columns with one unit keeps it; date_trunc and its friends keep a time a time; counts are counts
(NEON's "number"). Anything else (a product, a ratio, a variance, a constant, mixed units) has no
unit, and the column says why. Subqueries and CTEs in FROM are followed; a set operation keeps a
column's unit only when every branch gives it the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# What counts are in NEON's own vocabulary (the NumPts fields' units).
COUNT_UNIT = "number"
TIME_REASON = "a time (UTC)"
# Functions whose value has the unit of their first argument.
KEEP_FIRST = frozenset({
    "min", "max", "avg", "mean", "sum", "fsum", "sumkahan", "kahan_sum", "favg", "median", "quantile",
    "quantile_cont", "quantile_disc", "approx_quantile", "reservoir_quantile", "stddev", "stddev_samp",
    "stddev_pop", "first", "last", "any_value", "arbitrary", "mode", "arg_min", "arg_max", "min_by", "max_by",
    "argmin", "argmax", "abs", "round", "floor", "ceil", "ceiling", "trunc", "mad", "lag", "lead",
    "first_value", "last_value", "nth_value",
})
# Functions whose arguments must share the unit, which the value keeps.
KEEP_SHARED = frozenset({"coalesce", "ifnull", "greatest", "least", "nullif"})
# Which of them make no sense for a time (a sum of instants).
NOT_FOR_TIMES = frozenset({"sum", "fsum", "sumkahan", "kahan_sum", "avg", "mean", "favg", "stddev", "stddev_samp",
                           "stddev_pop", "mad", "abs", "round", "floor", "ceil", "ceiling", "trunc"})
COUNTS = frozenset({"count", "count_star", "count_if", "countif", "approx_count_distinct", "row_number"})
# A time's calendar functions: the value is still a time.
TIME_KEEPING = frozenset({"date_trunc", "datetrunc", "time_bucket", "last_day"})
SQUARED = frozenset({"variance", "var_samp", "var_pop"})
NUMERIC_CASTS = frozenset({"DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "INTEGER", "INT", "BIGINT", "SMALLINT",
                           "TINYINT", "HUGEINT", "FLOAT8", "FLOAT4", "INT8", "INT4"})
TIME_CASTS = frozenset({"DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", "DATETIME"})


@dataclass(frozen=True)
class Derived:
    """A column's unit, or None and why (`reason`); `time`: it holds instants."""

    unit: str | None
    reason: str | None = None
    time: bool = False

    @property
    def count(self) -> bool:
        return self.unit == COUNT_UNIT and self.reason is None


def none(reason: str) -> Derived:
    return Derived(None, reason)


@dataclass(frozen=True)
class Source:
    """A relation of the dataset as the query sees it: each column's unit (None: the variables
    file gives none) and which columns are times."""

    columns: Mapping[str, str | None]
    times: frozenset[str] = frozenset()

    def derived(self) -> dict[str, tuple[str, Derived]]:
        out = {}
        for name, unit in self.columns.items():
            if name in self.times:
                d = Derived(unit, None if unit else TIME_REASON, time=True)
            else:
                d = Derived(unit) if unit else none(f"{name} has no unit in NEON's variables file")
            out[name.lower()] = (name, d)
        return out


# A relation in scope: lower-case column -> (its name, its derivation); None: not known (a table
# function, VALUES, DESCRIBE), whose columns have no unit.
Relation = dict[str, tuple[str, Derived]] | None


@dataclass
class Derivation:
    """The result's columns in select-list order (None where a star could not be expanded) and by
    name (aliases and bare column names), for matching the engine's result description."""

    ordered: list[tuple[str | None, Derived]] | None
    unknown: str = "not derived from the query"

    def for_columns(self, names: Iterable[str]) -> list[Derived]:
        names = list(names)
        if self.ordered is not None and len(self.ordered) == len(names):
            return [d for _, d in self.ordered]
        by_name: dict[str, Derived] = {}
        for n, d in self.ordered or []:
            if n is not None:
                key = n.lower()
                by_name[key] = d if key not in by_name or by_name[key] == d else none("two columns of this name")
        return [by_name.get(n.lower(), none(self.unknown)) for n in names]


def derive(node: dict[str, Any], relations: Mapping[str, Source]) -> Derivation:
    """The derivation of a query's result columns over the dataset's `relations` (by lower-case
    name). Never raises on a shape it does not know: such columns have no unit and say so."""
    try:
        return Derivation(_node(node, {k.lower(): v.derived() for k, v in relations.items()}, {}))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):  # a tree of a form not foreseen
        return Derivation(None, "the query's shape is not one units are derived for")


def _ctes(node: dict[str, Any], tables: dict[str, Relation], ctes: dict[str, Relation]) -> dict[str, Relation]:
    entries = ((node.get("cte_map") or {}).get("map")) or []
    if not entries:
        return ctes
    scope = dict(ctes)
    for e in entries:
        body = (e.get("value") or {}).get("query_node")
        cols = _node(body, tables, scope) if isinstance(body, dict) else None
        aliases = [str(a) for a in (e.get("value") or {}).get("aliases") or []]
        scope[str(e["key"]).lower()] = _as_relation(cols, aliases)
    return scope


def _as_relation(cols: list[tuple[str | None, Derived]] | None, aliases: list[str] | None = None) -> Relation:
    if cols is None:
        return None
    out: dict[str, tuple[str, Derived]] = {}
    for i, (name, d) in enumerate(cols):
        if aliases and i < len(aliases):
            name = aliases[i]
        if name is not None:
            out[name.lower()] = (name, d)
    return out


def _node(node: dict[str, Any], tables: dict[str, Relation], ctes: dict[str, Relation]
          ) -> list[tuple[str | None, Derived]] | None:
    """A query node's output columns (name or None, derivation); None when a star cannot be
    expanded."""
    ctes = _ctes(node, tables, ctes)
    typ = node.get("type")
    if typ == "SET_OPERATION_NODE":
        children = node.get("children") or [c for c in (node.get("left"), node.get("right")) if c]
        branches = [_node(c, tables, ctes) for c in children]
        if not branches or any(b is None for b in branches):
            return None
        first = branches[0]
        assert first is not None
        merged: list[tuple[str | None, Derived]] = []
        for i, (name, d) in enumerate(first):
            others = [b[i][1] for b in branches[1:] if b is not None and i < len(b)]
            same = all(o.unit == d.unit and o.time == d.time for o in others)
            merged.append((name, d if same else none("the branches of the set operation give it different units")))
        return merged
    if typ != "SELECT_NODE":
        return None
    scope: dict[str, Relation] = {}
    _from(node.get("from_table"), tables, ctes, scope)
    out: list[tuple[str | None, Derived]] = []
    for item in node.get("select_list") or []:
        alias = str(item.get("alias") or "") or None
        if item.get("class") == "STAR":
            expanded = _star(item, scope)
            if expanded is None:
                return None
            out += expanded
            continue
        name = alias
        if name is None and item.get("class") == "COLUMN_REF":
            name = str((item.get("column_names") or [""])[-1])
        out.append((name, _expr(item, scope)))
    return out


def _from(ref: Any, tables: dict[str, Relation], ctes: dict[str, Relation], scope: dict[str, Relation]) -> None:
    if not isinstance(ref, dict):
        return
    typ = ref.get("type")
    if typ == "JOIN":
        _from(ref.get("left"), tables, ctes, scope)
        _from(ref.get("right"), tables, ctes, scope)
        return
    alias = str(ref.get("alias") or "").lower()
    if typ == "BASE_TABLE":
        name = str(ref.get("table_name") or "").lower()
        rel = ctes[name] if name in ctes and not ref.get("schema_name") else tables.get(name)
        scope[alias or name] = rel
    elif typ == "SUBQUERY":
        body = (ref.get("subquery") or {}).get("node")
        cols = _node(body, tables, ctes) if isinstance(body, dict) else None
        scope[alias or f"#{len(scope)}"] = _as_relation(cols, [str(a) for a in ref.get("column_name_alias") or []])
    elif typ != "EMPTY":
        scope[alias or f"#{len(scope)}"] = None


def _star(item: dict[str, Any], scope: dict[str, Relation]) -> list[tuple[str | None, Derived]] | None:
    if item.get("columns") or item.get("expr") is not None or item.get("rename_list"):
        return None  # COLUMNS(...), renames: matched by name instead
    relation = str(item.get("relation_name") or "").lower()
    rels = [scope.get(relation)] if relation else list(scope.values())
    if any(r is None for r in rels):
        return None
    exclude = {str(x).lower() for x in item.get("exclude_list") or []}
    exclude |= {str((x.get("column_names") or [""])[-1]).lower() if isinstance(x, dict) else str(x).lower()
                for x in item.get("qualified_exclude_list") or []}
    replaced = {str(r.get("alias") or r.get("name") or "").lower(): r for r in item.get("replace_list") or []
                if isinstance(r, dict)}
    out: list[tuple[str | None, Derived]] = []
    seen: set[str] = set()
    for r in rels:
        assert r is not None
        for key, (name, d) in r.items():
            if key in exclude or (key in seen and not relation):
                continue  # USING/NATURAL join columns appear once; others DuckDB would name twice anyway
            seen.add(key)
            out.append((name, none("replaced in the query") if key in replaced else d))
    return out


def _args(e: dict[str, Any]) -> list[Any]:
    if "arguments" in e:
        return [a.get("expression") if isinstance(a, dict) and "expression" in a else a for a in e["arguments"]]
    return list(e.get("children") or [])


def _column(e: dict[str, Any], scope: dict[str, Relation]) -> Derived:
    parts = [str(p) for p in e.get("column_names") or []]
    if not parts:
        return none("not a column of the tables read")
    column = parts[-1].lower()
    if len(parts) > 1:
        rels = [scope.get(parts[-2].lower())]
    else:
        rels = list(scope.values())
    found = [r[column][1] for r in rels if r is not None and column in r]
    if not found:
        if any(r is None for r in rels):
            return none(f"{parts[-1]} comes from a relation whose units are not known")
        return none(f"{parts[-1]} is not a column of the tables read")
    if len(set(found)) > 1:
        return none(f"{parts[-1]} names columns of different units")
    return found[0]


def _expr(e: Any, scope: dict[str, Relation]) -> Derived:
    if not isinstance(e, dict):
        return none("not derived from the query")
    cls = e.get("class")
    if cls == "COLUMN_REF":
        return _column(e, scope)
    if cls == "CONSTANT":
        return none("a constant")
    if cls == "CAST":
        inner = _expr(e.get("child"), scope)
        target = str((e.get("type_expr") or {}).get("type_name") or e.get("cast_type", {}).get("id") or "").upper()
        if target in NUMERIC_CASTS and not inner.time:
            return inner
        if target in TIME_CASTS and inner.time:
            return inner
        return none(f"cast to {target.lower() or 'another type'}")
    if cls == "OPERATOR" and e.get("type") == "OPERATOR_COALESCE":
        return _function("coalesce", _args(e), scope)
    if cls in ("FUNCTION", "WINDOW"):
        return _function(str(e.get("function_name") or "").lower(), _args(e), scope)
    if cls in ("COMPARISON", "CONJUNCTION") or (cls == "OPERATOR" and str(e.get("type", "")).startswith(
            ("OPERATOR_IS", "OPERATOR_NOT", "COMPARE_"))):
        return none("a condition (true or false)")
    if cls == "CASE":
        return none("a CASE expression")
    if cls == "SUBQUERY":
        return none("a subquery's value")
    return none(f"a {str(cls or 'expression').lower()} expression")


def _function(fn: str, args: list[dict[str, Any]], scope: dict[str, Relation]) -> Derived:
    if fn in COUNTS:
        return Derived(COUNT_UNIT)
    inner = [_expr(a, scope) for a in args]
    if fn in ("+", "-"):
        return _sum(fn, inner)
    if fn in KEEP_FIRST and inner:
        d = inner[0]
        if d.time and fn in NOT_FOR_TIMES:
            return none(f"{fn}() of a time")
        if fn == "sum" and d.count:
            return d
        return d
    if fn in KEEP_SHARED and inner:
        return inner[0] if all(x == inner[0] for x in inner) else none(f"{fn}() of values of different units")
    if fn in TIME_KEEPING:
        times = [x for x in inner if x.time]
        return times[0] if times else none(f"{fn}() of something not a time")
    if fn in SQUARED:
        unit = inner[0].unit if inner else None
        return none(f"{fn}() is in the square of the unit" + (f" ({unit} squared)" if unit else ""))
    if fn in ("*", "/", "//", "%", "^", "**", "pow", "power", "divide", "multiply"):
        return none("a product or ratio: its unit is not derived")
    return none(f"{fn}(): no rule gives its value a unit")


def _sum(fn: str, inner: list[Derived]) -> Derived:
    if len(inner) == 1:  # a sign
        d = inner[0]
        return d if not d.time else none("the negative of a time")
    if any(x.time for x in inner):
        if fn == "-" and all(x.time for x in inner):
            return none("a difference of times (an interval)")
        return none("a time shifted by a value")
    units = {x.unit for x in inner}
    if None in units:
        why = next(x.reason for x in inner if x.unit is None)
        return none(f"a {'sum' if fn == '+' else 'difference'} with a term of no unit ({why})")
    if len(units) > 1:
        return none(f"a {'sum' if fn == '+' else 'difference'} of mixed units ({', '.join(sorted(str(u) for u in units))})")
    return inner[0]
