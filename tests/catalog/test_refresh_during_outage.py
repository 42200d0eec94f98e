"""A refresh never stores a stale answer as fresh.

Through the real upstream client, with its answer cache on, against the simulator's fault switch:
during a REST outage the cache would serve stale-if-error answers to ordinary callers, but the
catalog refresh must ask the upstream, fail, say so, and leave the catalog's age alone, so that
readiness reports the outage.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from catalog.models import CatalogRefresh, CatalogState
from catalog.services import ensure_catalogs, refresh_catalogs
from catalog.services import warm as services
from catalog.status import catalog_status, readiness
from eco_core import config as eco_config
from upstream import context
from upstream.cache import UpstreamCache, locmem_backend
from upstream.client import UpstreamClient

OUTAGE = {"kind": "status", "route": "^/api/v0/", "status": 503}
SHORT_TTL_S = 60
REST_ONLY = ("releases", "locations")  # GraphQL has no root for them: always built from REST
_names = itertools.count()


@pytest.fixture
def outage_cfg(fresh_sim) -> Iterator[eco_config.EcoConfig]:
    """Pointed at the simulator, cache on, short release/location TTLs (the reported setup), and no
    retry backoff so a refused request fails at once."""
    cfg = eco_config.load_config(env={
        "ECO_MCP_ECO__BASE_URL": fresh_sim.base_url,
        "ECO_MCP_ECO__GRAPHQL_URL": fresh_sim.graphql_url,
        "ECO_MCP_CACHE__TTL_S__RELEASES": str(SHORT_TTL_S),
        "ECO_MCP_CACHE__TTL_S__LOCATIONS": str(SHORT_TTL_S),
        "ECO_MCP_ECO__RETRIES__BACKOFF_BASE_S": "0",
    }, warn=False)
    with eco_config.use_config(cfg):
        yield cfg


class CacheClock:
    """The answer cache's clock, moved by the test instead of by waiting."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _client(cfg: eco_config.EcoConfig, clock: CacheClock) -> UpstreamClient:
    cache = UpstreamCache(cfg.cache, backend=locmem_backend(cfg.cache.max_entries, name=f"outage-{next(_names)}"),
                          clock=clock)
    return UpstreamClient(cfg, cache=cache, namespace=f"outage{next(_names)}")


def _run(cfg: eco_config.EcoConfig, steps: Any) -> Any:
    """Every step on one event loop, so one client (and its cache) serves them all."""

    async def main() -> Any:
        clock = CacheClock()
        client = _client(cfg, clock)
        try:
            return await steps(client, clock)
        finally:
            await client.aclose()

    return async_to_sync(main)()


def _states() -> dict[str, CatalogState]:
    return {s.catalog: s for s in CatalogState.objects.all()}


def test_a_refresh_during_a_rest_outage_fails_keeps_the_catalog_age_and_reports_degraded(
        db, outage_cfg, fresh_sim, fresh_index):
    seen: dict[str, Any] = {}

    async def steps(client: UpstreamClient, clock: CacheClock) -> Any:
        first = await refresh_catalogs(client=client, cfg=outage_cfg)
        assert all(o.ok for o in first), [o.error for o in first]
        seen["before"] = await _async(_states)
        # The cached release and location answers are past their TTL but inside stale-if-error.
        clock.offset = SHORT_TTL_S * 2
        fresh_sim.faults.add(**OUTAGE)
        with context.call_scope() as acct:
            await client.releases()
        # An ordinary caller is served the stale answer: exactly what the refresh used to store.
        seen["ordinary_caller_stale"] = acct.stale_served
        seen["during"] = await refresh_catalogs(REST_ONLY, client=client, cfg=outage_cfg)
        seen["status_during"] = await _async(catalog_status, outage_cfg)
        seen["ready_during"] = await _async(readiness, outage_cfg)
        seen["states_during"] = await _async(_states)
        fresh_sim.faults.clear()
        seen["after"] = await refresh_catalogs(REST_ONLY, client=client, cfg=outage_cfg)
        return None

    _run(outage_cfg, steps)

    assert seen["ordinary_caller_stale"] is True
    during = {o.catalog: o for o in seen["during"]}
    for name in REST_ONLY:
        outcome = during[name]
        assert not outcome.ok and outcome.version is None
        assert outcome.error and "503" in outcome.error, outcome.error
        before, now = seen["before"][name], seen["states_during"][name]
        assert now.refreshed_at == before.refreshed_at and now.version == before.version
        assert now.last_error == outcome.error
        assert seen["status_during"][name]["lastError"] == outcome.error
        log = CatalogRefresh.objects.filter(catalog=name, ok=False).get()
        assert log.error == outcome.error and log.upstream_requests >= 1
    assert seen["status_during"]["degraded"] is True
    ready, body = seen["ready_during"]
    assert ready and body["degraded"] is True

    assert all(o.ok for o in seen["after"]), [o.error for o in seen["after"]]
    after = _states()
    for name in REST_ONLY:
        assert after[name].last_error == "" and after[name].refreshed_at > seen["before"][name].refreshed_at
    ready, body = readiness(outage_cfg)
    assert ready and body["degraded"] is False


def test_a_rest_refresh_of_products_and_sites_during_an_outage_fails_instead_of_reusing_the_cache(
        db, outage_cfg, fresh_sim, fresh_index):
    async def steps(client: UpstreamClient, clock: CacheClock) -> Any:
        first = await refresh_catalogs(("products", "sites"), client=client, source="rest", cfg=outage_cfg)
        assert all(o.ok for o in first), [o.error for o in first]
        fresh_sim.faults.add(**OUTAGE)
        # The cached /products and /sites answers are still within their TTL.
        return await refresh_catalogs(("products", "sites"), client=client, source="rest", cfg=outage_cfg)

    outcomes = _run(outage_cfg, steps)
    assert [(o.catalog, o.ok) for o in outcomes] == [("products", False), ("sites", False)]
    assert all("503" in (o.error or "") for o in outcomes)
    assert CatalogRefresh.objects.filter(ok=False).count() == 2
    ready, body = readiness(outage_cfg)
    assert ready and body["degraded"] is True


def test_a_refresh_asks_the_upstream_even_when_the_cached_answer_is_fresh(db, outage_cfg, fresh_sim, fresh_index):
    counts: dict[str, int] = {}

    async def steps(client: UpstreamClient, clock: CacheClock) -> Any:
        first = await refresh_catalogs(("releases",), client=client, cfg=outage_cfg)
        assert first[0].ok, first[0].error
        counts["after_first"] = fresh_sim.requests.count(r"^/api/v0/releases$")
        with context.call_scope() as acct:
            await client.releases()
        # The answer is cached and fresh: an ordinary caller is served it without a request.
        counts["cache_hits"] = acct.cache_hits
        counts["after_cached_read"] = fresh_sim.requests.count(r"^/api/v0/releases$")
        second = await refresh_catalogs(("releases",), client=client, cfg=outage_cfg)
        assert second[0].ok, second[0].error
        counts["refresh_requests"] = second[0].requests
        counts["after_second"] = fresh_sim.requests.count(r"^/api/v0/releases$")
        with context.call_scope() as acct:
            await client.releases()
        # What the refresh fetched was written back for everyone else.
        counts["cache_hits_after"] = acct.cache_hits
        counts["after_last_read"] = fresh_sim.requests.count(r"^/api/v0/releases$")

    _run(outage_cfg, steps)
    assert counts["after_first"] == 1
    assert counts["cache_hits"] == 1 and counts["after_cached_read"] == 1
    assert counts["after_second"] == 2 and counts["refresh_requests"] == 1
    assert counts["cache_hits_after"] == 1 and counts["after_last_read"] == 2


def test_a_failed_background_refresh_is_not_started_again_by_every_call_during_an_outage(
        db, mini_client, eco_cfg, fresh_sim, fresh_index, monkeypatch):
    monkeypatch.setattr(services, "_background", None)
    monkeypatch.setattr(services, "_failed_at", {})
    async_to_sync(refresh_catalogs)(client=mini_client, cfg=eco_cfg)
    # Releases inside the refresh-ahead window; every other catalog fresh.
    state = CatalogState.objects.get(catalog="releases")
    state.refreshed_at = datetime.now(UTC) - timedelta(seconds=eco_cfg.cache.ttl_s.releases * 0.99)
    state.version += 1
    state.save()
    fresh_index.mark_dirty()
    fresh_sim.faults.add(**OUTAGE)
    seen: dict[str, Any] = {}

    async def calls() -> None:
        await ensure_catalogs(eco_cfg, client=mini_client)
        first = services._background
        assert first is not None
        seen["first"] = await first
        mini_client.calls.clear()
        await ensure_catalogs(eco_cfg, client=mini_client)
        seen["second_started"] = services._background is not first
        seen["second_calls"] = list(mini_client.calls)
        # The retry interval has passed and the upstream is back.
        services._failed_at["releases"] -= services.RETRY_AFTER_FAILURE_S
        fresh_sim.faults.clear()
        await ensure_catalogs(eco_cfg, client=mini_client)
        third = services._background
        seen["third"] = await third if third is not first else None

    async_to_sync(calls)()
    assert [(o.catalog, o.ok) for o in seen["first"]] == [("releases", False)]
    assert seen["second_started"] is False and seen["second_calls"] == []
    assert [(o.catalog, o.ok) for o in seen["third"]] == [("releases", True)]
    assert "releases" not in services._failed_at
    assert CatalogState.objects.get(catalog="releases").last_error == ""


async def _async(fn: Any, *args: Any) -> Any:
    from asgiref.sync import sync_to_async

    return await sync_to_async(fn)(*args)
