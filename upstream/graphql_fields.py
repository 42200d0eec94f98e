"""What eco_graphql (upstream.graphql_window) works out on a parsed query with graphql-core: unknown
fields with their path, in NEON's wording (the local validation visitor), and what the query asks
for (aliases and an estimate of the values in its answer). A module of its own so graphql-core is
imported only when a query is checked, not when the tools are listed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    TypeInfo,
    Visitor,
    is_list_type,
    is_wrapping_type,
)
from graphql.pyutils import suggestion_list


class UndefinedFields(Visitor):
    """Unknown fields with their path, worded as graphql-java (NEON) words them."""

    def __init__(self, type_info: TypeInfo) -> None:
        super().__init__()
        self.ti = type_info
        self.stack: list[str] = []
        self.errors: list[dict[str, Any]] = []
        self.suggestions: list[str] = []

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        name = node.name.value
        self.stack.append(name)
        parent = self.ti.get_parent_type()
        if parent is None or self.ti.get_field_def() is not None or name.startswith("__"):
            return
        path = "/".join(self.stack)
        loc = node.loc.source.get_location(node.loc.start) if node.loc else None
        self.errors.append({
            "message": f"Validation error (FieldUndefined@[{path}]) : Field '{name}' in type '{parent.name}' "
                       "is undefined",
            "locations": [{"line": loc.line, "column": loc.column}] if loc else [],
            "extensions": {"classification": "ValidationError"},
        })
        fields = list(getattr(parent, "fields", {}) or {})
        self.suggestions.extend(s for s in suggestion_list(name, fields)[:3] if s not in self.suggestions)

    def leave_field(self, *_: Any) -> None:
        self.stack.pop()


# -- what a query asks for ---------------------------------------------------------------------

# Likely lengths of the root lists: NEON's catalog sizes (about 200 products, 81 sites).
ROOT_LIST_ESTIMATES = {"products": 200, "sites": 81, "prototypeDatasets": 50}
# Root lists as long as the codes their input names (argument, input field), else the default.
FILTERED_ROOTS = {"filterProducts": ("filter", "productCodes", 200), "filterSites": ("filter", "siteCodes", 81),
                  "findLocations": ("query", "locationNames", 1000)}
# A list nested in a list of the same name walks one tree down (a location hierarchy): its levels
# share that tree's nodes, so each deeper level only doubles the estimate.
RECURSION_ESTIMATE = 2


@dataclass(frozen=True)
class QueryCost:
    """Aliased fields, fields and the estimated values the query asks for (fragments counted as
    often as they are spread), in all and per root response key, largest first."""

    aliases: int
    nodes: int
    roots: list[tuple[str, int]]
    fields: int = 0


class CostEstimate:
    """Sizes an operation as if its fragments were expanded, without expanding them: each
    fragment's figures (aliases, fields, values per root key) are worked out once and then used
    as numbers wherever it is spread. Twenty-five fragments each spreading the next twice are
    2^25 copies of the last one's fields, counted in 25 steps, not walked 2^25 times."""

    def __init__(self, schema: GraphQLSchema, fragments: dict[str, FragmentDefinitionNode], *, list_estimate: int,
                 variables: dict[str, Any] | None) -> None:
        self.schema, self.fragments = schema, fragments
        self.list_estimate, self.variables = list_estimate, variables or {}
        self._aliases: dict[str, int] = {}
        self._fields: dict[str, int] = {}
        self._nodes: dict[tuple[str, frozenset[str]], int] = {}
        self._roots: dict[str, dict[str, int]] = {}

    def cost(self, op: OperationDefinitionNode) -> QueryCost:
        roots = self._root_nodes(op.selection_set)
        ranked = sorted(roots.items(), key=lambda kv: -kv[1])
        return QueryCost(aliases=self.aliases(op.selection_set), nodes=sum(roots.values()), roots=ranked,
                         fields=self.fields(op.selection_set))

    def _root_nodes(self, sel: SelectionSetNode) -> dict[str, int]:
        """Estimated values per root response key, a fragment's share computed once."""
        root = self.schema.query_type
        out: dict[str, int] = {}

        def add(part: dict[str, int]) -> None:
            for k, n in part.items():
                out[k] = out.get(k, 0) + n

        for s in sel.selections:
            if isinstance(s, FieldNode):
                add({s.alias.value if s.alias else s.name.value: self._field(s, root, frozenset())})
            elif isinstance(s, InlineFragmentNode):
                add(self._root_nodes(s.selection_set))
            elif isinstance(s, FragmentSpreadNode) and s.name.value in self.fragments:
                name = s.name.value
                if name not in self._roots:
                    self._roots[name] = self._root_nodes(self.fragments[name].selection_set)
                add(self._roots[name])
        return out

    def aliases(self, sel: SelectionSetNode | None) -> int:
        count = 0
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode):
                count += int(s.alias is not None and s.alias.value != s.name.value) + self.aliases(s.selection_set)
            elif isinstance(s, InlineFragmentNode):
                count += self.aliases(s.selection_set)
            elif isinstance(s, FragmentSpreadNode) and s.name.value in self.fragments:
                name = s.name.value
                if name not in self._aliases:
                    self._aliases[name] = self.aliases(self.fragments[name].selection_set)
                count += self._aliases[name]
        return count

    def fields(self, sel: SelectionSetNode | None) -> int:
        """Fields in the expanded selection (each list item not multiplied: the query's own size)."""
        count = 0
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode):
                count += 1 + self.fields(s.selection_set)
            elif isinstance(s, InlineFragmentNode):
                count += self.fields(s.selection_set)
            elif isinstance(s, FragmentSpreadNode) and s.name.value in self.fragments:
                name = s.name.value
                if name not in self._fields:
                    self._fields[name] = self.fields(self.fragments[name].selection_set)
                count += self._fields[name]
        return count

    def _nodes_of(self, sel: SelectionSetNode | None, parent: Any, lists: frozenset[str]) -> int:
        count = 0
        for s in sel.selections if sel else ():
            if isinstance(s, FieldNode):
                count += self._field(s, parent, lists)
            elif isinstance(s, InlineFragmentNode):
                cond = s.type_condition
                count += self._nodes_of(s.selection_set, self.schema.get_type(cond.name.value) if cond else parent,
                                        lists)
            elif isinstance(s, FragmentSpreadNode) and s.name.value in self.fragments:
                key = (s.name.value, lists)
                if key not in self._nodes:
                    frag = self.fragments[s.name.value]
                    self._nodes[key] = self._nodes_of(frag.selection_set,
                                                      self.schema.get_type(frag.type_condition.name.value), lists)
                count += self._nodes[key]
        return count

    def _field(self, node: FieldNode, parent: Any, lists: frozenset[str]) -> int:
        """1 for the field's key, plus what it holds: a list multiplies its items by its likely length."""
        name = node.name.value
        fdef = _field_def(self.schema, parent, name)
        if fdef is None:
            return 1  # __typename, or a field local validation refuses next
        length, is_list, kind = 1, False, fdef.type
        while is_wrapping_type(kind):
            if is_list_type(kind):
                is_list = True
                length *= self._length(node, parent, name, lists)
            kind = kind.of_type
        if node.selection_set:
            inner = self._nodes_of(node.selection_set, kind, lists | {name} if is_list else lists)
        else:
            inner = 1 if is_list else 0
        return 1 + length * inner

    def _length(self, node: FieldNode, parent: Any, name: str, lists: frozenset[str]) -> int:
        if parent is self.schema.query_type:
            if name in FILTERED_ROOTS:
                arg, codes, default = FILTERED_ROOTS[name]
                given = _argument(node, arg, self.variables)
                listed = given.get(codes) if isinstance(given, dict) else None
                return max(1, len(listed)) if isinstance(listed, list) else default
            return ROOT_LIST_ESTIMATES.get(name, self.list_estimate)
        return RECURSION_ESTIMATE if name in lists else self.list_estimate


def _field_def(schema: GraphQLSchema, parent: Any, name: str) -> Any:
    from graphql import SchemaMetaFieldDef, TypeMetaFieldDef

    if parent is schema.query_type and name in ("__schema", "__type"):
        return SchemaMetaFieldDef if name == "__schema" else TypeMetaFieldDef
    fields = getattr(parent, "fields", None)
    return fields.get(name) if fields else None


def _argument(node: FieldNode, name: str, variables: dict[str, Any]) -> Any:
    from graphql import value_from_ast_untyped

    for arg in node.arguments or ():
        if arg.name.value == name:
            return value_from_ast_untyped(arg.value, variables)
    return None
