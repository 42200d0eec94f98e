"""First use builds missing catalogs; a caller who already has a catalog never waits, and a
catalog near the end of its TTL is refreshed in the background when there is no broker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from asgiref.sync import async_to_sync

from catalog.models import CatalogRefresh, CatalogState, ProductRow
from catalog.services import ensure_catalogs, refresh_catalogs
from catalog.services import warm as services


def test_first_use_builds_the_missing_catalogs(db, mini_client, eco_cfg, fresh_index):
    async_to_sync(ensure_catalogs)(eco_cfg, client=mini_client, need=("products", "sites"))
    assert ProductRow.objects.count() > 150
    assert set(CatalogRefresh.objects.values_list("trigger", flat=True)) >= {"first-use"}


def _age_all(cfg, fraction: float) -> None:
    for state in CatalogState.objects.all():
        ttl = {"releases": cfg.cache.ttl_s.releases, "locations": cfg.cache.ttl_s.locations}.get(
            state.catalog, cfg.cache.ttl_s.catalog)
        state.refreshed_at = datetime.now(UTC) - timedelta(seconds=ttl * fraction)
        state.version += 1  # as if another process had written it: the index re-reads the state
        state.save()


def test_catalog_near_its_ttl_is_refreshed_in_the_background(db, mini_client, eco_cfg, fresh_index):
    async_to_sync(refresh_catalogs)(client=mini_client, cfg=eco_cfg)
    _age_all(eco_cfg, 1 - eco_cfg.cache.refresh_ahead / 2)
    fresh_index.mark_dirty()
    before = CatalogState.objects.get(catalog="products").version
    mini_client.calls.clear()

    async def caller():
        await ensure_catalogs(eco_cfg, client=mini_client)
        task = services._background
        # The caller got control back before any upstream request was made for it.
        assert task is not None and not task.done() and mini_client.calls == []
        return await task

    outcomes = async_to_sync(caller)()
    assert all(o.ok for o in outcomes) and {o.catalog for o in outcomes} == {"products", "sites", "releases",
                                                                               "locations"}
    assert CatalogState.objects.get(catalog="products").version > before
    assert CatalogRefresh.objects.filter(trigger="refresh-ahead").count() == 4


def test_fresh_catalog_starts_no_background_refresh(db, mini_client, eco_cfg, fresh_index):
    async_to_sync(refresh_catalogs)(client=mini_client, cfg=eco_cfg)
    services._background = None
    mini_client.calls.clear()
    async_to_sync(ensure_catalogs)(eco_cfg, client=mini_client)
    assert services._background is None and mini_client.calls == []


def test_with_a_broker_beat_owns_the_schedule(db, mini_client, eco_cfg, fresh_index, settings):
    async_to_sync(refresh_catalogs)(client=mini_client, cfg=eco_cfg)
    _age_all(eco_cfg, 0.99)
    fresh_index.mark_dirty()
    services._background = None
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    mini_client.calls.clear()
    async_to_sync(ensure_catalogs)(eco_cfg, client=mini_client)
    assert services._background is None and mini_client.calls == []
