"""One named location needs NEON, not the location catalog: with the catalog unbuilt and NEON's
`/locations/sites` failing (so it cannot be built), eco_get_location of a tower answers from
`GET /locations/{name}`, through the SDK's real MCP client over HTTP; what does need the catalog
(REALM's sites) is catalog_unavailable, and a 503 behind it is described as an error NEON
answered with, not as NEON not answering."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.db import connections
from mcp import Client

from catalog import index
from catalog.services import warm as catalog_services
from eco_core import config as eco_config
from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config
from upstream.client import close_clients


def _empty_catalog() -> None:
    for model in apps.get_app_config("catalog").get_models():
        model.objects.all().delete()


@pytest.fixture
async def no_catalog(sim, transactional_db):
    """An empty catalog, and NEON's site list failing with 503 until the test ends."""
    await sync_to_async(_empty_catalog)()
    sim.reset()
    index.reset()
    sim.faults.add("status", route=r"^/api/v0/locations/sites", status=503)
    cfg = sim_config(sim, server__transport="http")
    with eco_config.use_config(cfg):
        yield cfg
        if catalog_services._background is not None:
            await catalog_services._background
        await close_clients()
        await sync_to_async(connections.close_all)()
    sim.reset()
    index.reset()


async def test_a_tower_is_answered_from_neon_while_the_location_catalog_cannot_be_built_over_http(
        http_server, no_catalog, sim, active_config):
    active_config(no_catalog)
    tower = f"TOWER{sim.state.locations.block('HARV')}"
    with http_server(no_catalog) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "eco_get_location")
            before = sim.requests.count(rf"^/api/v0/locations/{tower}")
            got = await client.call_tool("eco_get_location", {"name": tower})
            body = assert_valid_tool_result(tool, got)
            assert body["locationName"] == tower and body["siteCode"] == "HARV"
            assert body["locationProperties"] is not None
            assert sim.requests.count(rf"^/api/v0/locations/{tower}") == before + 1
            assert any("location catalog is unavailable" in n for n in body["notes"]), body["notes"]
            # A four-letter site code still reads as one without the catalog.
            site = assert_valid_tool_result(tool, await client.call_tool("eco_get_location", {"name": "harv"}))
            assert site["locationName"] == "HARV"

            realm = await client.call_tool("eco_get_location", {"name": "REALM", "include": ["children"],
                                                                "location_type": "SITE"})
            assert realm.is_error
            err = realm.structured_content["error"]
            assert err["code"] == "catalog_unavailable" and err["retryable"] is True, err
            assert "503" in err["details"]["cause"], err
            assert "did not answer" not in err["hint"] and "answered with an error" in err["hint"], err
