"""`include: []` is the compact base record ("empty means the compact base record"): no product
list in eco_get_release, no files or locations in eco_get_prototype_dataset, and for the latter
no request for signed URLs. An absent `include` keeps each tool's default sections. Over HTTP
through the SDK client."""

from __future__ import annotations

from typing import Any

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session
from upstream_sim.biodata import RECORDED_PROTO_UUID


async def _ok(client: Any, tools: dict[str, Any], name: str, args: dict[str, Any]) -> dict[str, Any]:
    return assert_valid_tool_result(tools[name], await client.call_tool(name, args))


async def test_get_release_with_an_empty_include_leaves_every_section_out_and_without_include_lists_products(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        base = await _ok(client, tools, "eco_get_release", {"release": "RELEASE-2025", "include": []})
        assert base["release"] == "RELEASE-2025" and base["productCount"] > 0
        assert base["dataProducts"] is None and base["productsPage"] is None
        assert base["sites"] is None and base["artifacts"] is None
        default = await _ok(client, tools, "eco_get_release", {"release": "RELEASE-2025"})
        assert len(default["dataProducts"]) == 50 and default["productsPage"]["total"] == base["productCount"]


async def test_get_prototype_dataset_with_an_empty_include_has_no_files_or_locations_and_asks_once(
        http_server, sim_cfg, fresh_sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, fresh_sim, active_config) as (client, tools):
        base = await _ok(client, tools, "eco_get_prototype_dataset", {"uuid": RECORDED_PROTO_UUID, "include": []})
        assert base["files"] is None and base["filesPage"] is None and base["locations"] is None
        assert base["projectTitle"] and base["resolved"]["include"] == []
        assert fresh_sim.requests.count(r"^/api/v0/prototype/data/") == 0
        default = await _ok(client, tools, "eco_get_prototype_dataset", {"uuid": RECORDED_PROTO_UUID})
        assert default["files"] and default["locations"] is not None
        assert default["resolved"]["include"] == ["files", "locations"]
