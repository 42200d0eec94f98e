"""How the schema compaction writes a tool's types: each once, where it is used, unless shared;
recursion kept; nullability and leaf types kept; a map of models keeps its values' fields."""

from __future__ import annotations

from typing import Literal

import jsonschema
import pytest

from eco_core.wire import Envelope, WireModel
from mcp_gateway.schemas import output_schema


class Leaf(WireModel):
    name: str
    size: int | None = None


class Node(WireModel):
    label: str
    children: list[Node] = []


class Out(Envelope):
    only: Leaf | None = None
    first: Leaf
    second: Leaf
    tree: Node
    by_key: dict[str, Leaf] = {}
    kind: Literal["a", "b"] = "a"


def _valid(**over: object) -> dict[str, object]:
    body: dict[str, object] = {
        "resolved": {}, "notes": [], "nextSteps": [], "source": {"origin": "local", "endpoints": [],
                                                                 "apiBaseUrl": None, "stale": False},
        "only": None, "first": {"name": "x", "size": 1}, "second": {"name": "y", "size": None},
        "tree": {"label": "r", "children": [{"label": "c", "children": []}]},
        "byKey": {"k": {"name": "z", "size": 2}}, "kind": "a"}
    return {**body, **over}


def test_a_shared_type_is_written_once_in_defs_and_a_recursive_one_stays_there():
    schema = output_schema(Out)
    assert set(schema["$defs"]) == {"Leaf", "Node"}  # Leaf: used four times; Node: by itself
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    jsonschema.Draft202012Validator(schema).validate(_valid())


def test_a_type_used_once_is_written_where_it_is_used_keeping_its_null():
    class Once(Envelope):
        only: Leaf | None = None

    schema = output_schema(Once)
    assert "$defs" not in schema
    assert schema["properties"]["only"]["type"] == ["object", "null"]
    assert set(schema["properties"]["only"]["properties"]) == {"name", "size"}


@pytest.mark.parametrize(("field", "value"), [
    ("first", {"name": 5, "size": 1}),  # a leaf's type is still stated
    ("second", {"name": "y", "size": "big"}),
    ("kind", "c"),  # enum values still bound it
    ("byKey", {"k": {"name": 1}}),  # a map of models still describes its values
    ("tree", {"label": "r", "children": [{"label": 3}]}),
    ("only", {"name": "x", "size": 1.5}),  # through a nullable reference too
])
def test_the_compacted_output_schema_still_refuses_a_wrong_value(field, value):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(output_schema(Out)).validate(_valid(**{field: value}))


def test_the_root_keeps_its_object_type_and_lists_no_required_fields():
    schema = output_schema(Out)
    assert schema["type"] == "object" and "required" not in schema
    assert all("required" not in d for d in schema["$defs"].values())


def test_an_input_schema_states_every_default_false_and_0_included():
    from pydantic import Field

    from eco_core.wire import ToolInput
    from mcp_gateway.schemas import input_schema

    class In(ToolInput):
        offset: int = Field(0, ge=0)
        verbose: bool = False
        limit: int = 25
        urls: bool = True
        budget: float = 0.0
        include: list[str] = []
        at: int | None = 0
        name: str | None = None  # null when left out: no default written

    props = input_schema(In)["properties"]
    assert props["offset"]["minimum"] == 0
    assert [props[n]["default"] for n in ("offset", "verbose", "limit", "urls", "budget", "include", "at")] == [
        0, False, 25, True, 0.0, [], 0]
    assert "default" not in props["name"]
