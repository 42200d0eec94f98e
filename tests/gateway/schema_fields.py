"""Every field a tool's schema declares, as paths (`items[].siteCode`, a map's values `catalogs{}.count`) with the JSON types the
schema allows there, found the way a reader of the schema finds them: through properties, array
items, unions and `$defs` references (when no type is written, `properties` shows an object,
`items` an array, and `enum` or `const` the types of its values). The measure that compacting the schemas keeps every input and output field, and
each field's types."""

from __future__ import annotations

from typing import Any


def field_types(schema: dict[str, Any]) -> dict[str, list[str]]:
    defs = schema.get("$defs", {})
    found: dict[str, set[str]] = {}

    def resolve(node: Any, seen: frozenset[str]) -> list[tuple[dict[str, Any], frozenset[str]]]:
        """The node and every schema it stands for (its reference, its union's branches)."""
        if not isinstance(node, dict):
            return []
        out = [(node, seen)]
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name not in seen:  # a recursive type is walked once
                out += resolve(defs[name], seen | {name})
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in node.get(key, []):
                out += resolve(branch, seen)
        return out

    def walk(node: Any, path: str, seen: frozenset[str]) -> None:
        parts = resolve(node, seen)
        if path:
            kinds = found.setdefault(path, set())
            for part, _ in parts:
                declared = part.get("type") or _implied(part)
                kinds.update([declared] if isinstance(declared, str) else declared)
        for part, part_seen in parts:
            items = part.get("items")
            if isinstance(items, dict):
                walk(items, f"{path}[]", part_seen)
            values = part.get("additionalProperties")
            if isinstance(values, dict):
                walk(values, f"{path}{{}}", part_seen)
            for name, sub in part.get("properties", {}).items():
                walk(sub, f"{path}.{name}" if path else name, part_seen)

    walk(schema, "", frozenset())
    return {path: sorted(kinds) for path, kinds in sorted(found.items())}


_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def _implied(part: dict[str, Any]) -> list[str]:
    if "enum" in part or "const" in part:
        return [_JSON_TYPE[type(v)] for v in part.get("enum", [part.get("const")])]
    return ["object"] if "properties" in part else ["array"] if "items" in part else []
