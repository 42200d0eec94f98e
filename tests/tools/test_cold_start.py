"""A stdio server starts with no catalog (no prewarm): the first discovery call builds it,
counting those requests, and later calls are served from it with none."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.db import connections

from catalog import index
from catalog.services import warm as catalog_services
from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.tools.conftest import sim_config
from upstream.client import close_clients


def _empty_catalog() -> None:
    for model in apps.get_app_config("catalog").get_models():
        model.objects.all().delete()


@pytest.fixture
async def cold(sim, transactional_db):
    """An empty catalog; whatever the test builds is flushed with the database afterwards."""
    # Really cold: a refresh left running by an earlier test (in a worker thread that outlived
    # its event loop) may have committed rows after that test's database was cleaned.
    await sync_to_async(_empty_catalog)()
    sim.reset()
    index.reset()
    with eco_config.use_config(sim_config(sim)) as cfg:
        yield cfg
        # The first call also starts a background refresh of the other catalogs: let it finish
        # before its client and its database go away.
        if catalog_services._background is not None:
            await catalog_services._background
        await close_clients()
        await sync_to_async(connections.close_all)()
    index.reset()


async def test_first_search_on_a_cold_server_builds_the_catalog_then_serves_from_it(cold, sim):
    spec = default_registry().get("eco_search_products")

    async def call():
        result = await execute(spec, {"query": "soil temperature"}, CallContext(
            cfg=cold, transport="stdio", protocol_version="2026-07-28"), token=None)
        assert not result.is_error, result.structured_content
        return result

    before = sim.requests.count(r"^/graphql|^/api/v0/(products|sites)$")
    first = await call()
    built = sim.requests.count(r"^/graphql|^/api/v0/(products|sites)$") - before
    assert built >= 1 and first.meta["io.eco-mcp/upstream"]["requests"] == built
    assert first.structured_content["items"][0]["productCode"] == "DP1.00041.001"
    second = await call()
    assert second.meta["io.eco-mcp/upstream"]["requests"] == 0
    assert second.structured_content["items"] == first.structured_content["items"]
