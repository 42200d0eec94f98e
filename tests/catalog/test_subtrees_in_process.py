"""The location subtrees without a broker (catalog.services.warm): walked in a background task
after the catalogs at an HTTP start that prewarms, refreshed ahead of their TTL when a tool call
notices it, never waited for by the call that starts the walk, never started on a stdio start
that does not prewarm (with prewarm set there, by the first tool call), left to beat with a broker, and not retried at once after a failure.
Against the simulator, with a few of its sites so each walk stays short."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync

from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationNodeRow, LocationRow
from catalog.services import refresh_catalogs, warm
from catalog.services.location_subtrees import refresh_location_subtrees
from eco_core import config as eco_config

SITES = ("BART", "HARV")


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    """Each test is a process that has not prewarmed, checked or failed anything yet."""
    monkeypatch.setattr(warm, "_subtrees", None)
    monkeypatch.setattr(warm, "_subtrees_wanted", False)
    monkeypatch.setattr(warm, "_subtrees_checked_at", -float("inf"))
    monkeypatch.setattr(warm, "_failed_at", {})


@pytest.fixture
def two_sites(db, mini_client, eco_cfg, fresh_index):
    """The locations catalog (2 requests) cut down to two SITE rows: what the walk walks."""
    assert all(o.ok for o in async_to_sync(refresh_catalogs)(("locations",), client=mini_client, cfg=eco_cfg))
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=SITES).delete()
    mini_client.calls.clear()


def _http_cfg(sim):
    """An HTTP configuration (prewarm on by default there) pointed at the simulator."""
    return eco_config.load_config(flags={"server.transport": "http"}, env={
        "ECO_MCP_ECO__BASE_URL": sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url}, warn=False)


def _start_and_finish(cfg, client, **kw):
    """(what the starting call saw upstream before it returned, the background walk's outcome or None)."""

    async def go():
        task = await warm.refresh_subtrees_ahead(cfg, client=client, **kw)
        seen = list(client.calls)
        return seen, (await task if task is not None else None)

    return async_to_sync(go)()


def test_the_prewarm_walks_missing_subtrees_in_a_background_task_the_caller_does_not_wait_for(
        two_sites, mini_client, fresh_sim):
    cfg = _http_cfg(fresh_sim)
    assert cfg.prewarm
    seen, outcome = _start_and_finish(cfg, mini_client, prewarm=True)
    assert seen == []  # the call came back before the walk asked the upstream anything
    assert outcome is not None and outcome.ok, outcome
    assert sorted(LocationNodeRow.objects.filter(depth=0).values_list("name", flat=True)) == list(SITES)
    assert CatalogRefresh.objects.get(catalog=SUBTREES).trigger == "prewarm"
    # Fresh now: a later start walks nothing.
    mini_client.calls.clear()
    assert _start_and_finish(cfg, mini_client, prewarm=True) == ([], None)


def test_a_stdio_start_without_prewarm_never_walks_missing_subtrees(two_sites, mini_client, eco_cfg):
    assert not eco_cfg.prewarm
    assert _start_and_finish(eco_cfg, mini_client) == ([], None)
    assert not CatalogState.objects.filter(catalog=SUBTREES).exists() and mini_client.calls == []


def test_on_stdio_with_prewarm_set_a_tool_calls_notice_walks_missing_subtrees_in_the_background(
        two_sites, mini_client, fresh_sim):
    cfg = eco_config.load_config(flags={"cache.prewarm": True}, env={
        "ECO_MCP_ECO__BASE_URL": fresh_sim.base_url, "ECO_MCP_ECO__GRAPHQL_URL": fresh_sim.graphql_url}, warn=False)
    assert not cfg.is_http and cfg.prewarm
    seen, outcome = _start_and_finish(cfg, mini_client)
    assert seen == [] and outcome is not None and outcome.ok
    assert CatalogRefresh.objects.get(catalog=SUBTREES).trigger == "refresh-ahead"


def test_stored_subtrees_inside_the_refresh_ahead_window_are_walked_again_in_the_background(
        two_sites, mini_client, eco_cfg):
    first = async_to_sync(refresh_location_subtrees)(client=mini_client, trigger="test")
    assert first.ok
    ttl = eco_cfg.cache.ttl_s.locations
    CatalogState.objects.filter(catalog=SUBTREES).update(
        refreshed_at=datetime.now(UTC) - timedelta(seconds=ttl * (1 - eco_cfg.cache.refresh_ahead / 2)))
    mini_client.calls.clear()
    seen, outcome = _start_and_finish(eco_cfg, mini_client)  # stdio: refresh-ahead needs no prewarm
    assert seen == [] and outcome is not None and outcome.ok and outcome.version == first.version + 1
    assert CatalogRefresh.objects.filter(catalog=SUBTREES, trigger="refresh-ahead").count() == 1
    # The next calls within SUBTREES_CHECK_S read nothing and start nothing.
    mini_client.calls.clear()
    assert _start_and_finish(eco_cfg, mini_client) == ([], None)


def test_subtrees_younger_than_the_refresh_ahead_window_are_left_alone(two_sites, mini_client, eco_cfg):
    assert async_to_sync(refresh_location_subtrees)(client=mini_client, trigger="test").ok
    ttl = eco_cfg.cache.ttl_s.locations
    CatalogState.objects.filter(catalog=SUBTREES).update(
        refreshed_at=datetime.now(UTC) - timedelta(seconds=ttl * (1 - eco_cfg.cache.refresh_ahead * 2)))
    mini_client.calls.clear()
    assert _start_and_finish(eco_cfg, mini_client) == ([], None)


def test_with_a_broker_beat_owns_the_subtrees_and_nothing_walks_in_process(two_sites, mini_client, fresh_sim,
                                                                           settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    assert _start_and_finish(_http_cfg(fresh_sim), mini_client, prewarm=True) == ([], None)
    assert mini_client.calls == []


def test_a_failed_walk_is_not_started_again_by_this_process_until_the_retry_interval_passed(
        two_sites, mini_client, fresh_sim):
    cfg = _http_cfg(fresh_sim)
    fresh_sim.faults.add("status", route=r"^/api/v0/locations/HARV$", status=503)
    _, failed = _start_and_finish(cfg, mini_client, prewarm=True)
    assert failed is not None and not failed.ok and "503" in failed.error
    fresh_sim.faults.clear()
    mini_client.calls.clear()
    assert _start_and_finish(cfg, mini_client, prewarm=True) == ([], None)
    # The interval has passed (and, for a tool call, the check interval): a process that
    # prewarmed builds its missing subtrees from a tool call's notice too.
    warm._failed_at[SUBTREES] -= warm.RETRY_AFTER_FAILURE_S
    warm._subtrees_checked_at -= warm.SUBTREES_CHECK_S
    _, outcome = _start_and_finish(cfg, mini_client)
    assert outcome is not None and outcome.ok and SUBTREES not in warm._failed_at
    assert CatalogRefresh.objects.filter(catalog=SUBTREES, trigger="refresh-ahead", ok=True).count() == 1


def test_nothing_is_walked_before_the_locations_catalog_exists(db, mini_client, fresh_sim, fresh_index):
    assert _start_and_finish(_http_cfg(fresh_sim), mini_client, prewarm=True) == ([], None)
    assert not CatalogState.objects.filter(catalog=SUBTREES).exists()
