"""The local validation visitor of eco_graphql (catalog.graphql_window): unknown fields with their
path, in NEON's wording. A module of its own so graphql-core, which it subclasses, is imported only
when a query is validated, not when the tools are listed."""

from __future__ import annotations

from typing import Any

from graphql import FieldNode, TypeInfo, Visitor
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
