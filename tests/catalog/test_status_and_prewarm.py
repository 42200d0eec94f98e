"""Readiness and catalog status (what /readyz and eco_ping report), and prewarm through the real
upstream client against the simulator."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse

from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationRow, ProductRow
from catalog.services import prewarm, refresh_catalogs
from catalog.services.location_subtrees import refresh_location_subtrees
from catalog.status import catalog_status, readiness
from eco_core.errors import EcoError
from families.products import SearchProductsInput, find_products
from upstream.client import get_client


def test_readiness_is_warming_until_products_and_sites_exist(db, eco_cfg):
    never = {"lastAttemptAt": None, "lastError": None, "upstreamMismatch": None}
    assert readiness(eco_cfg) == (False, {"status": "warming", "waitingFor": {"products": never, "sites": never},
                                          "reason": "the products catalog has not been built yet (no attempt has "
                                                    "ended); the sites catalog has not been built yet (no attempt "
                                                    "has ended)"})
    assert catalog_status(eco_cfg)["products"] == {"count": 0, "ageSeconds": None, "source": None,
                                                   "refreshedAt": None, "stale": True, "lastError": None,
                                                   "restBase": None, "graphqlUrl": None, "upstreamMismatch": None}


def test_search_before_any_catalog_is_catalog_unavailable(db, fresh_index):
    with pytest.raises(EcoError) as exc:
        find_products(fresh_index.get_index(), SearchProductsInput(query="soil"))
    assert exc.value.code == "catalog_unavailable"


def test_prewarm_through_the_real_client_makes_the_service_ready(db, sim_cfg, fresh_index, fresh_sim):
    outcomes = async_to_sync(prewarm)(sim_cfg)
    assert {o.catalog for o in outcomes} == {"products", "sites", "releases", "locations"}
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    ready, body = readiness(sim_cfg)
    assert ready and body["status"] == "ready"
    assert set(body["catalogs"]) == {"products", "sites", "releases", "locations"}
    assert all(c["ageSeconds"] is not None and c["ageSeconds"] >= 0 for c in body["catalogs"].values())
    assert body["catalogs"]["sites"]["rows"] == 81
    assert {c["restBase"] for c in body["catalogs"].values()} == {sim_cfg.eco.base_url}
    assert body["degraded"] is False and body["tokenConfigured"] is False
    # The location subtrees are said for information; none stored does not hold readiness up.
    assert body["subtrees"] == {"rows": 0, "ageSeconds": None, "stale": True, "refreshing": False, "sitesDone": 0,
                                "sitesTotal": 0, "lastError": None, "upstreamMismatch": None}
    status = catalog_status(sim_cfg)
    assert status["products"]["source"] == "graphql" and status["products"]["count"] > 150
    assert status["sites"]["count"] == 81 and not status["sites"]["stale"]
    # A second prewarm finds nothing due and asks the upstream nothing.
    assert async_to_sync(prewarm)(sim_cfg) == []

    # The subtrees' state is said beside the catalogs, failed or stored, and readiness never waits
    # for it (two sites walked: the walk itself is tests/catalog/test_location_subtrees.py's).
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=("BART", "HARV")).delete()
    fresh_sim.faults.add("status", route=r"^/api/v0/locations/HARV$", status=503)

    async def walk():  # the shared client belongs to the event loop it is asked for on
        return await refresh_location_subtrees(client=get_client())

    failed = async_to_sync(walk)()
    ready, body = readiness(sim_cfg)
    assert ready and set(body["catalogs"]) == {"products", "sites", "releases", "locations"}
    assert (body["subtrees"]["rows"], body["subtrees"]["lastError"]) == (0, failed.error) and "503" in failed.error
    assert (body["subtrees"]["sitesDone"], body["subtrees"]["sitesTotal"]) == (1, 2)
    fresh_sim.faults.clear()
    done = async_to_sync(walk)()
    ready, body = readiness(sim_cfg)
    assert ready and body["subtrees"]["rows"] == done.rows > 2 and body["subtrees"]["stale"] is False
    assert body["subtrees"]["ageSeconds"] >= 0 and body["subtrees"]["lastError"] is None
    assert body["subtrees"]["upstreamMismatch"] is None and SUBTREES not in body["catalogs"]


def test_prewarm_never_raises_when_the_upstream_is_down(db, sim_cfg, fresh_sim, fresh_index):
    fresh_sim.faults.add("status", route=r".", status=503)
    outcomes = async_to_sync(prewarm)(sim_cfg)
    assert outcomes and not any(o.ok for o in outcomes)
    assert "503" in outcomes[0].error
    ready, body = readiness(sim_cfg)
    assert not ready and body["status"] == "warming" and set(body["waitingFor"]) == {"products", "sites"}
    failed = body["waitingFor"]["products"]
    assert "503" in failed["lastError"] and failed["lastAttemptAt"].endswith("Z")
    assert body["reason"].startswith(f"the products catalog could not be built from {sim_cfg.eco.base_url} (last attempt "
                                     f"{failed['lastAttemptAt']}): {failed['lastError']}; the sites catalog")


def test_failed_refresh_after_a_good_one_is_ready_but_degraded(db, mini_client, eco_cfg, fresh_sim, fresh_index):
    async_to_sync(refresh_catalogs)(("products", "sites"), client=mini_client, cfg=eco_cfg)
    fresh_sim.faults.add("graphql_outage")
    fresh_sim.faults.add("status", route=r"^/api/v0/products$", status=503)
    async_to_sync(refresh_catalogs)(("products",), client=mini_client, cfg=eco_cfg)
    ready, body = readiness(eco_cfg)
    assert ready and body["degraded"] is True
    assert catalog_status(eco_cfg)["products"]["lastError"].startswith("upstream_error")
    assert ProductRow.objects.count() > 150


def test_catalog_older_than_its_ttl_is_stale(db, mini_client, eco_cfg, fresh_index):
    async_to_sync(refresh_catalogs)(("releases",), client=mini_client, cfg=eco_cfg)
    CatalogState.objects.filter(catalog="releases").update(
        refreshed_at=datetime.now(UTC) - timedelta(seconds=eco_cfg.cache.ttl_s.releases + 5))
    entry = catalog_status(eco_cfg)["releases"]
    assert entry["stale"] is True and entry["ageSeconds"] > eco_cfg.cache.ttl_s.releases


def test_admin_index_says_warming_before_any_catalog(admin_client):
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "warming" in page and "never built" in page


def test_refresh_now_without_a_broker_runs_in_the_request(admin_client, sim_cfg, fresh_index):
    url = reverse("admin:catalog_catalogstate_changelist")
    admin_client.get(url)  # creates a row per catalog
    resp = admin_client.post(url, {"action": "refresh_now", "_selected_action": ["releases"]}, follow=True)
    assert resp.status_code == 200
    assert "releases: 6 rows from rest" in resp.content.decode().lower()
    assert CatalogRefresh.objects.get(catalog="releases").trigger == "admin"
    assert CatalogState.objects.get(catalog="releases").row_count == 6


def test_refresh_now_with_a_broker_queues_the_task_instead_of_running_it(admin_client, sim_cfg, settings, monkeypatch):
    from catalog.tasks import refresh_catalogs_task

    queued = []
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/15"
    monkeypatch.setattr(refresh_catalogs_task, "apply_async", lambda **kw: queued.append(kw))
    url = reverse("admin:catalog_catalogstate_changelist")
    admin_client.get(url)
    resp = admin_client.post(url, {"action": "refresh_now", "_selected_action": ["releases", "sites"]}, follow=True)
    assert resp.status_code == 200
    assert "queued" in resp.content.decode()
    assert queued == [{"kwargs": {"catalogs": ["releases", "sites"], "trigger": "admin"}}]
    assert not CatalogRefresh.objects.exists()
