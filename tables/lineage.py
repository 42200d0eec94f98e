"""Which rows fed a query's answer: the releases they came from (so the answer cites those, not
every release of the tables) and, for an aggregate of measured fields of a table with a final
quality flag that the query does not filter on, how many of the rows it read were flagged.

    plan(ds, sql) -> FollowUp      pure (DuckDB's parser only, in the engine worker): the follow-up
                                   query, or why none; to_json/from_json carry it to the server
    FollowUp.read(row) -> Lineage  what the follow-up answered

The follow-up is the query's own FROM and WHERE with a select list of its own
(`list(DISTINCT release)`, `count(*) FILTER (WHERE finalQF <> 0)`), rebuilt from DuckDB's parse
of the query (json_serialize_sql, then json_deserialize_sql), and run through the same sandboxed
engine as the query. That is exact for a SELECT over one of the dataset's tables or views; for a
join, a set operation, a CTE or subquery in FROM, HAVING, QUALIFY or SAMPLE the rows that fed the
answer are not decidable this way, and the answer cites every release of the tables read.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tables import quality

if TYPE_CHECKING:
    from tables.query import Dataset, Table

RELEASE = "release"
# Aggregates whose value is made of the rows' values (a flagged row changes it).
AGGREGATES = frozenset({
    "min", "max", "avg", "mean", "sum", "fsum", "favg", "median", "quantile", "quantile_cont", "quantile_disc",
    "approx_quantile", "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "first", "last",
    "any_value", "arbitrary", "mode", "mad", "list", "array_agg", "histogram", "arg_min", "arg_max", "min_by",
    "max_by", "sumkahan", "kahan_sum", "corr", "covar_pop", "covar_samp", "regr_slope",
})


@dataclass
class Lineage:
    releases: set[str] | None  # None: the rows' releases are not known (no release column)
    rows: int
    flagged: int | None  # rows read with a final flag set, when asked


@dataclass
class FollowUp:
    sql: str | None  # None: nothing to ask (undecidable, or no table of the dataset read)
    table: Table | None = None
    releases: bool = False  # the follow-up answers the rows' releases
    flags: list[str] = field(default_factory=list)  # the flags it counts rows with set
    fields: list[str] = field(default_factory=list)  # the measured fields aggregated without their flag
    undecidable: str | None = None  # why the rows' releases are not decidable from the query's shape

    def to_json(self) -> dict[str, Any]:
        """What crosses from the engine worker: the table by name."""
        return {"sql": self.sql, "table": self.table.name if self.table else None, "releases": self.releases,
                "flags": self.flags, "fields": self.fields, "undecidable": self.undecidable}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None, ds: Dataset) -> FollowUp:
        if not data:
            return cls(None)
        t = ds.tables.get(str(data.get("table") or "").lower())
        return cls(data.get("sql"), t, bool(data.get("releases")), list(data.get("flags") or []),
                   list(data.get("fields") or []), data.get("undecidable"))

    def read(self, row: list[Any] | tuple[Any, ...]) -> Lineage:
        values = list(row)
        releases = {str(r) for r in values.pop(0) or [] if r is not None} if self.releases else None
        rows = int(values.pop(0) or 0)
        flagged = int(values.pop(0) or 0) if self.flags else None
        return Lineage(releases, rows, flagged)


def _parse(con: Any, sql: str) -> dict[str, Any] | None:
    row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    tree = json.loads(row[0]) if row else {}
    if tree.get("error") or len(tree.get("statements") or []) != 1:
        return None
    return tree  # type: ignore[no-any-return]


def _columns_named(node: Any) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            if d.get("class") == "COLUMN_REF" and d.get("column_names"):
                out.add(str(d["column_names"][-1]).lower())
            stack.extend(d.values())
        elif isinstance(d, list):
            stack.extend(d)
    return out


def _aggregated(select_list: list[Any]) -> list[tuple[set[str], set[str]]]:
    """Per aggregate in the select list: the columns it reads and the columns its FILTER names."""
    out = []
    stack = list(select_list)
    while stack:
        d = stack.pop()
        if isinstance(d, dict):
            fn = str(d.get("function_name") or "").lower()
            if d.get("class") in ("FUNCTION", "WINDOW") and fn in AGGREGATES:
                args = d.get("arguments") if "arguments" in d else d.get("children")
                out.append((_columns_named(args), _columns_named(d.get("filter") or d.get("filter_expr"))))
                continue
            stack.extend(d.values())
        elif isinstance(d, list):
            stack.extend(d)
    return out


def _shape(node: dict[str, Any]) -> str | None:
    """Why the rows that fed the answer are not decidable from this node; None when they are."""
    if node.get("type") != "SELECT_NODE":
        return "a set operation"
    if ((node.get("cte_map") or {}).get("map")):
        return "a WITH clause"
    ref = node.get("from_table") or {}
    if ref.get("type") == "JOIN":
        return "a join"
    if ref.get("type") != "BASE_TABLE":
        return "a subquery or function in FROM"
    if node.get("having") is not None:
        return "a HAVING clause"
    if node.get("qualify") is not None:
        return "a QUALIFY clause"
    if node.get("sample") is not None or ref.get("sample") is not None:
        return "a SAMPLE clause"
    return None


def plan(ds: Dataset, sql: str, con: Any = None) -> FollowUp:
    """The follow-up query of `sql` over the dataset `ds` (parsed again on `con`, the query's own
    connection, else one of its own; the query was checked)."""
    import duckdb

    own = con is None
    if own:
        con = duckdb.connect(":memory:")
    try:
        tree = _parse(con, sql)
        if tree is None:
            return FollowUp(None, undecidable="the query could not be parsed again")
        node = tree["statements"][0]["node"]
        why = _shape(node)
        if why is not None:
            return FollowUp(None, undecidable=why)
        ref = node["from_table"]
        t = ds.tables.get(str(ref.get("table_name") or "").lower())
        if t is None or ref.get("schema_name"):
            return FollowUp(None)
        base = ds.tables.get(t.reads[0].lower()) if t.reads else t
        base_cols = base.columns if base is not None else t.columns
        lowered = {c.lower(): c for c in t.columns}
        where = _columns_named(node.get("where_clause"))
        flags: list[str] = []
        fields: list[str] = []
        for read, filtered in _aggregated(node.get("select_list") or []):
            for col in sorted(read):
                name = lowered.get(col)
                if name is None or name not in base_cols or not quality.measured(base_cols, name):
                    continue
                flag = quality.flag_for(base_cols, name)
                if flag is None or flag.lower() in where or flag.lower() in filtered:
                    continue
                fields.append(name)
                if flag not in flags:
                    flags.append(flag)
        releases = RELEASE in t.columns
        if not releases and not flags:
            return FollowUp(None, table=t)
        parts = ([f'list(DISTINCT "{RELEASE}") AS releases'] if releases else []) + ["count(*) AS n"]
        if flags:
            parts.append("count(*) FILTER (WHERE " + " OR ".join(f'"{f}" <> 0' for f in flags) + ") AS flagged")
        template = _parse(con, "SELECT " + ", ".join(parts))
        if template is None:  # pragma: no cover  (a fixed template)
            return FollowUp(None, undecidable="internal")
        follow = copy.deepcopy(tree)
        n = follow["statements"][0]["node"]
        n["select_list"] = template["statements"][0]["node"]["select_list"]
        n.update(group_expressions=[], group_sets=[], having=None, qualify=None, modifiers=[],
                 aggregate_handling="STANDARD_HANDLING")
        row = con.execute("SELECT json_deserialize_sql(?)", [json.dumps(follow)]).fetchone()
        text = str(row[0]) if row else ""
        return FollowUp(text or None, table=t, releases=releases, flags=flags, fields=sorted(set(fields)),
                        undecidable=None if text else "the query could not be rebuilt")
    except duckdb.Error:
        return FollowUp(None, undecidable="the query could not be parsed again")
    finally:
        if own:
            con.close()
