"""The tool surface: declarations, schemas, annotations, _meta, listing and its snapshots.

Each tool's surface (its tools/list entry: input and output schema, description, annotations,
_meta) is committed as snapshots/<tool>.json, so a change to the surface is deliberate and shows
which tool changed: after an intended change, run this file with ECO_UPDATE_SNAPSHOTS=1 and commit
the files it writes (a new tool gets its file the same way; a removed tool's file is deleted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from eco_core.config import ConfigError
from mcp_gateway.registry import Registry, default_registry
from mcp_gateway.server import build_server
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec

SNAPSHOTS = Path(__file__).parent / "snapshots"
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
        assert {"resolved", "notes", "nextSteps", "source"} <= set(tool["outputSchema"]["required"])


@pytest.mark.parametrize(("tool", "field"), [("eco_get_availability", "rows"), ("eco_get_product", "availabilityRows")])
def test_availability_rows_carry_the_type_name_the_spec_gives_them(tool, field):
    # The two tools' rows differ in shape, but the spec names both AvailabilityRow.
    schema = next(t["outputSchema"] for t in _listed(http=False) if t["name"] == tool)
    assert "AvailabilityRow" in schema["$defs"]
    assert "#/$defs/AvailabilityRow" in json.dumps(schema["properties"][field])


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


def test_tools_list_is_sorted_stable_and_within_its_byte_bound():
    cfg = make_cfg()
    first, second = _listed(http=False), _listed(http=False)
    assert first == second
    assert [t["name"] for t in first] == sorted(t["name"] for t in first)
    size = len(json.dumps({"tools": first}, separators=(",", ":")))
    assert size <= cfg.limits.tools_list_max_bytes
    assert default_registry().tools_list_bytes(http=False) == size


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
