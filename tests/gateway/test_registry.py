"""The tool surface: declarations, schemas, annotations, _meta, listing and its snapshots.

Each tool's surface (its tools/list entry: input and output schema, description, annotations,
_meta) is committed as snapshots/<tool>.json, so a change to the surface is deliberate and shows
which tool changed: after an intended change, run this file with ECO_UPDATE_SNAPSHOTS=1 and commit
the files it writes (a new tool gets its file the same way; a removed tool's file is deleted)."""

from __future__ import annotations

import json
import os
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from pydantic import BaseModel

from eco_core.config import ConfigError
from mcp_gateway.registry import Registry, default_registry
from mcp_gateway.server import build_server
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec
from tests.gateway.schema_fields import field_types
from tests.gateway.wire import modern_request, reply

SNAPSHOTS = Path(__file__).parent / "snapshots"
SCHEMA_FIELDS = Path(__file__).parent / "schema_fields.json"
UPDATE = "ECO_UPDATE_SNAPSHOTS"
SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
META_KEYS = {"io.eco-mcp/surface", "requiresToken", "endpoints", "stdioOnly"}


def _listed(http: bool) -> list[dict]:
    return [s.tool.model_dump(by_alias=True, mode="json", exclude_none=True) for s in default_registry().listed(http=http)]


@pytest.mark.parametrize("tool", _listed(http=False), ids=lambda t: t["name"])
def test_each_tool_surface_matches_its_committed_snapshot(tool):
    path = SNAPSHOTS / f"{tool['name']}.json"
    if os.environ.get(UPDATE):
        path.write_text(json.dumps(tool, indent=1, sort_keys=True) + "\n")
    regenerate = f"if intended, run pytest {Path(__file__).name} with {UPDATE}=1 and commit {path.name}"
    assert path.exists(), f"{tool['name']} has no snapshot: {regenerate}"
    assert tool == json.loads(path.read_text()), f"the surface of {tool['name']} changed: {regenerate}"


def test_every_snapshot_belongs_to_a_declared_tool():
    declared = set(default_registry().names())
    orphans = sorted(p for p in SNAPSHOTS.glob("*.json") if p.stem not in declared)
    if os.environ.get(UPDATE):
        for p in orphans:
            p.unlink()
        orphans = []
    assert [p.name for p in orphans] == [], f"snapshots of tools that no longer exist: delete them or run with {UPDATE}=1"


def test_every_tool_declares_2020_12_schemas_that_are_themselves_valid():
    for tool in _listed(http=False):
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            assert schema["$schema"] == SCHEMA_2020_12, (tool["name"], key)
            jsonschema.Draft202012Validator.check_schema(schema)
        assert tool["outputSchema"]["type"] == "object"
        assert {"resolved", "notes", "nextSteps", "source"} <= set(tool["outputSchema"]["properties"])


def test_compacting_the_schemas_keeps_every_input_and_output_field_with_its_types():
    # SCHEMA_FIELDS holds every field path and its JSON types as the schemas declared them before
    # they were compacted (written once from the snapshots of that time); fields added since are
    # free, a field or a type missing is not.
    before = json.loads(SCHEMA_FIELDS.read_text())
    for tool in _listed(http=False):
        for side, key in (("input", "inputSchema"), ("output", "outputSchema")):
            now = {path: "|".join(kinds) for path, kinds in field_types(tool[key]).items()}
            kept = before.get(tool["name"], {}).get(side, {})
            assert {p: now.get(p) for p in kept} == kept, (tool["name"], side)


def test_a_type_used_once_is_written_in_place_and_a_shared_one_once_in_defs():
    for tool in _listed(http=False):
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            text = json.dumps(schema)
            for name in schema.get("$defs", {}):
                assert text.count(f'"#/$defs/{name}"') >= 2, (tool["name"], key, name)


def _models(tp: Any, found: set[type[BaseModel]]) -> set[type[BaseModel]]:
    if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in found:
        found.add(tp)
        for f in tp.model_fields.values():
            _models(f.annotation, found)
    for arg in typing.get_args(tp):
        _models(arg, found)
    return found


def test_no_two_wire_types_share_a_name():
    # A shared type is written in $defs under its class name: two shapes of one name would make
    # the name mean two things across the tool list.
    found: set[type[BaseModel]] = set()
    for spec in default_registry().listed(http=False):
        _models(spec.output_model, found)
        _models(spec.input_model, found)
    names: dict[str, list[str]] = {}
    for model in found:
        names.setdefault(model.__name__, []).append(f"{model.__module__}.{model.__qualname__}")
    assert {n: sorted(m) for n, m in names.items() if len(m) > 1} == {}


def test_every_input_property_is_snake_case():
    for tool in _listed(http=False):
        for name in tool["inputSchema"].get("properties", {}):
            assert name == name.lower(), (tool["name"], name)


# The tools that write files: into the download directory (stdio), or, for stacks over HTTP, into
# the server's dataset store. Only the download tool is stdio-only: its files are the caller's.
WRITERS = {"eco_download_files", "eco_stack_tables"}
STDIO_ONLY = {"eco_download_files"}


def test_annotations_follow_the_spec_read_only_except_downloads():
    for tool in _listed(http=False):
        a = tool["annotations"]
        assert a["destructiveHint"] is False and a["idempotentHint"] is True and a["openWorldHint"] is True
        assert a["readOnlyHint"] is (tool["name"] not in WRITERS)


def test_every_tool_carries_the_spec_meta_keys():
    for tool in _listed(http=False):
        assert set(tool["_meta"]) == META_KEYS
        assert tool["_meta"]["stdioOnly"] is (tool["name"] in STDIO_ONLY)


# What an agent loads into its context on every conversation: the tool list over HTTP, with every
# tool served there, fits TOOL_LIST_BOUND. Each tool has a share of it (bytes of its compact
# tools/list entry, a little above its size when the share was set); the shares of the tools HTTP
# lists add up to at most the bound, so the list fits whatever each tool does within its share. A
# tool outgrowing its share shrinks or takes bytes from another's; a new tool needs a share, and
# what the shares leave of the bound is the room for it. bench/bench_tool_list.py prints the sizes.
TOOL_LIST_BOUND = 75_000
SHARES = {
    "eco_describe_tables": 3290, "eco_download_files": 3640, "eco_find_locations": 3090, "eco_get_availability": 3740,
    "eco_get_citation": 2210, "eco_get_document": 2280, "eco_get_location": 4130, "eco_get_product": 5770,
    "eco_get_prototype_dataset": 3560, "eco_get_release": 3290, "eco_get_sample": 3130, "eco_get_site": 3610,
    "eco_graphql": 2340, "eco_list_files": 4450, "eco_list_releases": 1810, "eco_list_sample_classes": 1800,
    "eco_ping": 2650, "eco_plot_tables": 3780, "eco_query_tables": 2360, "eco_search_products": 3240,
    "eco_search_prototype_datasets": 2760, "eco_search_sites": 3260, "eco_search_taxonomy": 2470, "eco_stack_tables": 4470,
}
# Tools stdio lists alone today that are to be served over HTTP too: counted in the HTTP list.
TO_BE_SERVED_OVER_HTTP = {"eco_stack_tables"}


def _entry_bytes(tool: dict[str, Any]) -> int:
    return len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False).encode())


def _over_http() -> Registry:
    """The registry with every tool HTTP is to list listed there."""
    return Registry(replace(s, stdio_only=False) if s.name in TO_BE_SERVED_OVER_HTTP else s
                    for s in default_registry().listed(http=False))


def test_tools_list_is_sorted_stable_and_within_its_byte_bound():
    cfg = make_cfg()
    first, second = _listed(http=False), _listed(http=False)
    assert first == second
    assert [t["name"] for t in first] == sorted(t["name"] for t in first)
    size = len(json.dumps({"tools": first}, separators=(",", ":")))
    assert size <= cfg.limits.tools_list_max_bytes
    assert default_registry().tools_list_bytes(http=False) == size
    assert _over_http().tools_list_bytes(http=True) <= TOOL_LIST_BOUND


def test_each_tool_stays_within_its_share_of_the_tool_list_and_the_shares_within_the_bound():
    sizes = {t["name"]: _entry_bytes(t) for t in _listed(http=False)}
    assert set(sizes) == set(SHARES), "every tool has a share of the tool list (SHARES), and only declared tools"
    assert {n: (size, SHARES[n]) for n, size in sizes.items() if size > SHARES[n]} == {}
    http = [s.name for s in _over_http().listed(http=True)]
    # {"tools":[...]}: 12 bytes around the entries and a comma between each two.
    assert sum(SHARES[n] for n in http) + 12 + len(http) - 1 <= TOOL_LIST_BOUND


def test_the_tool_list_an_http_client_receives_fits_the_bound(http_server):
    body, headers = modern_request("tools/list")
    with http_server(registry=_over_http()) as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    result = reply(resp)["result"]
    names = [t["name"] for t in result["tools"]]
    assert TO_BE_SERVED_OVER_HTTP <= set(names)
    assert set(names) == {s.name for s in _over_http().listed(http=True)}
    assert len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()) <= TOOL_LIST_BOUND


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tools_list_over_its_byte_bound_stops_the_server_naming_the_setting_and_the_size(transport):
    size = default_registry().tools_list_bytes(http=transport == "http")
    with pytest.raises(ConfigError, match=rf"^limits\.tools_list_max_bytes: .* is {size} bytes, over the bound of 1000"):
        build_server(make_cfg(server__transport=transport, limits__tools_list_max_bytes=1000))
    # exactly at the bound is allowed
    build_server(make_cfg(server__transport=transport, limits__tools_list_max_bytes=size))


def test_http_lists_every_tool_except_stdio_only_ones():
    reg = Registry([echo_spec(), echo_spec(name="eco_a_download", stdio_only=True, read_only=False)])
    assert [s.name for s in reg.listed(http=False)] == ["eco_a_download", "eco_echo"]
    assert [s.name for s in reg.listed(http=True)] == ["eco_echo"]
    stdio_names = {t["name"] for t in _listed(http=False)}
    http_names = {t["name"] for t in _listed(http=True)}
    assert stdio_names - http_names <= WRITERS


def test_a_tool_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        Registry([echo_spec(), echo_spec()])


def test_tool_names_must_carry_the_eco_prefix():
    with pytest.raises(ValueError, match="eco_"):
        echo_spec(name="ping")


async def test_the_server_lists_what_the_registry_lists_for_its_transport():
    from mcp import Client

    reg = Registry([echo_spec(), echo_spec(name="eco_a_download", stdio_only=True)])
    async with Client(build_server(make_cfg(server__transport="stdio"), reg), mode="2026-07-28") as client:
        names = [t.name for t in (await client.list_tools()).tools]
    assert names == ["eco_a_download", "eco_echo"]
