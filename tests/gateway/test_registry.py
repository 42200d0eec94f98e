"""The tool surface: declarations, schemas, annotations, _meta, listing and its snapshot.

The snapshot (snapshots/tools_list_stdio.json) makes every change to the surface deliberate:
after an intended change, run with ECO_UPDATE_SNAPSHOTS=1 and commit the new file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from mcp_gateway.registry import Registry, default_registry
from mcp_gateway.server import build_server
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list_stdio.json"
SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
META_KEYS = {"io.eco-mcp/surface", "requiresToken", "endpoints", "stdioOnly"}


def _listed(http: bool) -> list[dict]:
    return [s.tool.model_dump(by_alias=True, mode="json", exclude_none=True) for s in default_registry().listed(http=http)]


def test_tools_list_matches_the_committed_snapshot():
    current = _listed(http=False)
    if os.environ.get("ECO_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())


def test_every_tool_declares_2020_12_schemas_that_are_themselves_valid():
    for tool in _listed(http=False):
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            assert schema["$schema"] == SCHEMA_2020_12, (tool["name"], key)
            jsonschema.Draft202012Validator.check_schema(schema)
        assert {"resolved", "notes", "nextSteps", "source"} <= set(tool["outputSchema"]["required"])


def test_every_input_property_is_snake_case():
    for tool in _listed(http=False):
        for name in tool["inputSchema"].get("properties", {}):
            assert name == name.lower(), (tool["name"], name)


def test_annotations_follow_the_spec_read_only_except_downloads():
    for tool in _listed(http=False):
        a = tool["annotations"]
        assert a["destructiveHint"] is False and a["idempotentHint"] is True and a["openWorldHint"] is True
        assert a["readOnlyHint"] is (tool["name"] != "eco_download_files")


def test_every_tool_carries_the_spec_meta_keys():
    for tool in _listed(http=False):
        assert set(tool["_meta"]) == META_KEYS
        assert tool["_meta"]["stdioOnly"] is (tool["name"] == "eco_download_files")


def test_tools_list_is_sorted_stable_and_within_its_byte_bound():
    cfg = make_cfg()
    first, second = _listed(http=False), _listed(http=False)
    assert first == second
    assert [t["name"] for t in first] == sorted(t["name"] for t in first)
    assert len(json.dumps({"tools": first}, separators=(",", ":"))) <= cfg.limits.tools_list_max_bytes


def test_http_lists_every_tool_except_stdio_only_ones():
    reg = Registry([echo_spec(), echo_spec(name="eco_a_download", stdio_only=True, read_only=False)])
    assert [s.name for s in reg.listed(http=False)] == ["eco_a_download", "eco_echo"]
    assert [s.name for s in reg.listed(http=True)] == ["eco_echo"]
    stdio_names = {t["name"] for t in _listed(http=False)}
    http_names = {t["name"] for t in _listed(http=True)}
    assert stdio_names - http_names <= {"eco_download_files"}


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
