"""What the location tool tests share: the stored site subtrees (the subtree refresh run once per
module against the simulator, committed so the tools' read threads and the HTTP server see them,
removed at the module's end), and the upstream-only answers to compare them with (the same
calls with the stored subtrees left out: the fallback path)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from catalog.locations import LocationCatalog
from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationNodeRow
from catalog.services.location_subtrees import refresh_location_subtrees
from eco_core.config import EcoConfig
from eco_core.memo import memos
from families import locations
from tests.catalog.conftest import MiniClient
from upstream.client import UpstreamClient


@pytest.fixture(scope="module")
def stored_subtrees(catalog_module, django_db_blocker, sim):
    """Every site's subtree in the location catalog for the rest of the module. Tests that need
    the fallback path (nothing stored) come before the first test that asks for this."""
    client = MiniClient(sim.base_url, sim.graphql_url)
    with django_db_blocker.unblock():
        outcome = async_to_sync(refresh_location_subtrees)(client=client, trigger="test")
        assert outcome.ok, outcome.error
    yield outcome
    with django_db_blocker.unblock():
        LocationNodeRow.objects.all().delete()
        CatalogState.objects.filter(catalog=SUBTREES).delete()
        CatalogRefresh.objects.filter(catalog=SUBTREES).delete()
    memos.drop_all()  # the site trees remembered under this generation


@contextlib.contextmanager
def subtrees_hidden() -> Iterator[None]:
    """The location tools read the location catalog without its stored subtrees, as before the
    subtree refresh ever ran. The family's one way to the catalog is replaced for the block: the
    tests compare the same call on both paths while the subtrees stay stored."""
    real = locations.location_catalog

    async def without_subtrees(cfg: EcoConfig, client: UpstreamClient) -> LocationCatalog:
        catalog = await real(cfg, client)
        assert catalog.trees is not None, "the stored subtrees should be served here"
        return replace(catalog, trees=None)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(locations, "location_catalog", without_subtrees)
        yield


def without_coordinates(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Location summaries minus what a stored node knows and an unlooked-up upstream one does not."""
    return [{k: v for k, v in i.items() if k not in ("latitude", "longitude")} for i in items]
