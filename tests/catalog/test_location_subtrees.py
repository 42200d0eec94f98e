"""The subtree refresh (catalog.services.location_subtrees) against the simulator: every site's
subtree stored with each node's record, its request count, all-or-nothing on a failed site or
GraphQL batch, one run at a time, its pacing rule, its beat entry and a real worker running it,
and its freshness and progress in the admin and in eco_ping's catalog status."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.urls import reverse
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationNodeRow, LocationRow
from catalog.schedule import SUBTREES_PERIODIC_TASK_NAME
from catalog.services import refresh_catalogs, run_lock
from catalog.services.location_subtrees import RECORD_BATCH, pause_before_next, refresh_location_subtrees
from catalog.status import catalog_status
from catalog.tasks import SUBTREES_TASK_NAME
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.catalog.celery_worker import require_postgres, run_beat_entry
from tests.catalog.conftest import MiniClient, _wipe

ROOT = Path(__file__).resolve().parents[2]


def _sim_tree(sim, site: str) -> list[str]:
    """The site and every node below it, pre-order, as the simulator's hierarchy=true lists them."""
    locs = sim.state.locations
    out: list[str] = []

    def walk(node: dict) -> None:
        out.append(node["locationName"])
        for child in locs.children(node):
            walk(child)

    walk(locs.get(site))
    return out


@pytest.fixture
def locations_built(db, mini_client, eco_cfg, fresh_index):
    """Only the locations catalog (2 requests): its SITE rows are what the subtree refresh walks."""
    outcomes = async_to_sync(refresh_catalogs)(("locations",), client=mini_client, cfg=eco_cfg)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]


def _keep_sites(sim, count: int) -> list[str]:
    """Leave `count` SITE rows (HARV first, then aquatic and terrestrial ones) in the locations
    catalog, so a walk that is not about all 81 sites stays short."""
    world = sim.world.sites
    aquatic = sorted(c for c in world if world[c]["_aquatic"])
    keep = sorted(["HARV", aquatic[0], *[c for c in sorted(world) if c != "HARV" and c not in aquatic]][:count])
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=keep).delete()
    return keep


def _refresh(client) -> object:
    return async_to_sync(refresh_location_subtrees)(client=client, trigger="test")


def _stored() -> list[tuple[str, str, int, str]]:
    return list(LocationNodeRow.objects.order_by("site_code", "seq").values_list("name", "site_code", "seq", "parent"))


def test_the_refresh_stores_every_sites_subtree_in_upstream_order_with_each_nodes_record(
        locations_built, mini_client, fresh_sim):
    # A run that died an hour ago does not hold the next one back.
    CatalogState.objects.update_or_create(catalog=SUBTREES, defaults={
        "progress_done": 7, "progress_total": 81, "progress_at": datetime.now(UTC) - timedelta(hours=1)})
    fresh_sim.requests.clear()
    outcome = _refresh(mini_client)
    assert outcome.ok, outcome.error
    sites = sorted(fresh_sim.world.sites)
    expected = {site: _sim_tree(fresh_sim, site) for site in sites}
    total = sum(len(names) for names in expected.values())
    for site in sites:
        rows = list(LocationNodeRow.objects.filter(site_code=site).order_by("seq").values_list("name", "depth"))
        assert [name for name, _ in rows] == expected[site], site
        assert rows[0] == (site, 0)
    assert outcome.rows == total == LocationNodeRow.objects.count()
    # One hierarchy request per site, and the records of all nodes in batches of 1000 names.
    assert fresh_sim.requests.count(r"^/api/v0/locations/") == len(sites)
    assert fresh_sim.requests.count(r"^/graphql") == math.ceil(total / RECORD_BATCH)
    assert outcome.requests == len(sites) + math.ceil(total / RECORD_BATCH)

    tower = f"TOWER{fresh_sim.state.locations.block('HARV')}"
    node = fresh_sim.state.locations.get(tower)
    row = LocationNodeRow.objects.get(name=tower)
    assert (row.site_code, row.depth, row.parent, row.location_type) == ("HARV", 1, "HARV", "TOWER")
    assert (row.latitude, row.longitude, row.elevation) == (node["locationDecimalLatitude"],
                                                             node["locationDecimalLongitude"], node["locationElevation"])
    assert row.record["locationUtmZone"] == node["locationUtmZone"] and row.record["locationParent"] == "HARV"
    plot = fresh_sim.state.locations.get("HARV_001.basePlot.all")
    plot_row = LocationNodeRow.objects.get(name="HARV_001.basePlot.all")
    assert plot_row.record["locationPolygon"] == plot["_polygon"]
    assert [p["locationPropertyValue"] for p in plot_row.record["locationProperties"]] == [v for _, v in plot["_props"]]
    assert LocationNodeRow.objects.get(name="HARV").parent == "D01"

    state = CatalogState.objects.get(catalog=SUBTREES)
    assert (state.version, state.row_count, state.last_error) == (1, total, "")
    assert (state.progress_done, state.progress_total, state.progress_at) == (len(sites), len(sites), None)
    assert state.rest_base == fresh_sim.base_url
    log = CatalogRefresh.objects.get(catalog=SUBTREES)
    assert log.ok and log.rows == total and log.upstream_requests == outcome.requests and log.trigger == "test"


def test_a_failed_site_or_graphql_batch_keeps_the_previous_subtrees_and_records_the_error(
        locations_built, mini_client, fresh_sim, eco_cfg):
    sites = _keep_sites(fresh_sim, 4)
    assert _refresh(mini_client).ok
    before, good = _stored(), CatalogState.objects.get(catalog=SUBTREES)
    fresh_sim.faults.add("status", route=f"^/api/v0/locations/{sites[2]}$", status=503)
    failed = _refresh(mini_client)
    assert not failed.ok and failed.version is None and "503" in failed.error
    state = CatalogState.objects.get(catalog=SUBTREES)
    assert _stored() == before
    assert (state.version, state.refreshed_at, state.row_count) == (good.version, good.refreshed_at, good.row_count)
    assert state.last_error == failed.error
    # The progress says how far the failed walk got; it is not running any more.
    assert (state.progress_done, state.progress_total, state.progress_at) == (2, len(sites), None)
    status = catalog_status(eco_cfg)
    assert status[SUBTREES]["lastError"] == failed.error and status["degraded"] is True
    assert (status[SUBTREES]["sitesDone"], status[SUBTREES]["refreshing"]) == (2, False)
    assert status[SUBTREES]["count"] == good.row_count  # still served

    fresh_sim.faults.clear()
    fresh_sim.faults.add("graphql_outage")
    no_records = _refresh(mini_client)
    assert not no_records.ok and "502" in no_records.error
    assert _stored() == before and CatalogState.objects.get(catalog=SUBTREES).version == good.version
    logs = list(CatalogRefresh.objects.filter(catalog=SUBTREES).order_by("started_at").values_list("ok", "error"))
    assert logs == [(True, ""), (False, failed.error), (False, no_records.error)]


def test_a_refresh_does_not_start_while_another_is_under_way(locations_built, mini_client, fresh_sim):
    CatalogState.objects.update_or_create(catalog=SUBTREES, defaults={
        "progress_done": 3, "progress_total": 81, "progress_at": datetime.now(UTC)})
    # What a live run holds from its claim to its end (a kill -9 frees it: test_kill9_subtrees).
    live = run_lock.try_hold(SUBTREES)
    assert live is not None
    try:
        fresh_sim.requests.clear()
        outcome = _refresh(mini_client)
    finally:
        live.release()
    assert not outcome.ok and "under way (3/81 sites)" in outcome.error
    assert fresh_sim.requests.count("") == 0 and not CatalogRefresh.objects.filter(catalog=SUBTREES).exists()
    assert CatalogState.objects.get(catalog=SUBTREES).last_error == ""


def test_the_run_lock_admits_one_holder_at_a_time_and_is_free_again_once_released(db):
    first = run_lock.try_hold(SUBTREES)
    assert first is not None
    try:
        assert run_lock.try_hold(SUBTREES) is None
        other = run_lock.try_hold("another-run")  # a lock of another name is another lock
        assert other is not None
        other.release()
    finally:
        first.release()
    again = run_lock.try_hold(SUBTREES)
    assert again is not None
    again.release()


def test_a_moving_progress_left_by_a_dead_run_does_not_hold_the_next_one_back_and_the_walk_logs_its_progress(
        locations_built, mini_client, fresh_sim, eco_cfg, caplog):
    sites = _keep_sites(fresh_sim, 4)
    # A run that was killed a moment ago: its progress looks alive, but nobody holds the lock.
    CatalogState.objects.update_or_create(catalog=SUBTREES, defaults={
        "progress_done": 2, "progress_total": 4, "progress_at": datetime.now(UTC)})
    caplog.set_level("INFO", logger="eco.catalog.subtrees")
    outcome = _refresh(mini_client)
    assert outcome.ok, outcome.error
    assert LocationNodeRow.objects.filter(depth=0).count() == len(sites)
    walked = [r.getMessage().split(" sites walked")[0] for r in caplog.records if "sites walked" in r.getMessage()]
    assert walked == [f"subtrees: {n}/{len(sites)}" for n in range(1, len(sites) + 1)]
    state = CatalogState.objects.get(catalog=SUBTREES)
    assert (state.progress_done, state.progress_at) == (len(sites), None)


def test_a_progress_is_refreshing_while_its_lock_is_held_and_marked_failed_once_the_lock_is_seen_free(db, eco_cfg):
    from catalog.status import INTERRUPTED

    claimed = datetime.now(UTC)  # a progress that looks alive: it moved a moment ago
    CatalogState.objects.update_or_create(catalog=SUBTREES, defaults={
        "progress_done": 5, "progress_total": 81, "progress_at": claimed})
    live = run_lock.try_hold(SUBTREES)
    assert live is not None
    try:
        entry = catalog_status(eco_cfg)[SUBTREES]
        assert (entry["sitesDone"], entry["refreshing"], entry["lastError"]) == (5, True, None)
        assert CatalogState.objects.get(catalog=SUBTREES).progress_at == claimed
    finally:
        live.release()  # what a kill -9 does to the walk's lock
    status = catalog_status(eco_cfg)
    entry = status[SUBTREES]
    assert (entry["sitesDone"], entry["sitesTotal"], entry["refreshing"]) == (5, 81, False)
    assert entry["lastError"] == INTERRUPTED and status["degraded"] is True
    state = CatalogState.objects.get(catalog=SUBTREES)
    assert (state.progress_at, state.last_error) == (None, INTERRUPTED)
    assert catalog_status(eco_cfg)[SUBTREES]["lastError"] == INTERRUPTED  # said once, kept


def test_a_dead_walks_progress_is_not_cleared_over_a_new_walks_claim(db, eco_cfg):
    from catalog.status import _mark_interrupted

    dead = datetime.now(UTC) - timedelta(minutes=1)
    CatalogState.objects.update_or_create(catalog=SUBTREES, defaults={"progress_done": 5, "progress_at": dead})
    read = CatalogState.objects.get(catalog=SUBTREES)
    # A new walk took the free lock and claimed between the status's read and its update.
    CatalogState.objects.filter(catalog=SUBTREES).update(progress_done=0, progress_at=datetime.now(UTC))
    after = _mark_interrupted(read)
    assert after.progress_at is not None and after.last_error == ""


def test_without_the_locations_catalog_the_refresh_fails_and_says_why(db, mini_client, fresh_index):
    outcome = _refresh(mini_client)
    assert not outcome.ok and "locations catalog has not been built" in outcome.error
    assert CatalogState.objects.get(catalog=SUBTREES).last_error == outcome.error


@pytest.mark.parametrize(("info", "pause"), [
    (None, 0.0),
    ({"remaining": None, "limit": None, "budgetPerSecond": 1.8}, 0.0),  # nothing heard from NEON yet
    ({"remaining": 150, "limit": 200, "budgetPerSecond": 1.8}, 0.0),
    ({"remaining": 100, "limit": 200, "budgetPerSecond": 1.8}, 0.0),
    ({"remaining": 99, "limit": 200, "budgetPerSecond": 1.8}, 1 / 0.9),  # half the anonymous refill
    ({"remaining": 10, "limit": 2000, "budgetPerSecond": 7.2}, 1 / 3.6),  # half the token refill
])
def test_the_walk_paces_itself_once_neon_reports_less_than_half_its_budget_left(info, pause):
    assert pause_before_next(info) == pytest.approx(pause)


def test_the_subtrees_have_their_own_beat_entry_on_the_locations_ttl(db, eco_cfg):
    task = PeriodicTask.objects.get(name=SUBTREES_PERIODIC_TASK_NAME)
    assert task.task == SUBTREES_TASK_NAME and task.enabled
    assert (task.interval.every, task.interval.period) == (eco_cfg.cache.ttl_s.locations, IntervalSchedule.SECONDS)


@pytest.fixture
def roomy_budget(locations_built, fresh_sim):
    """The simulator's configuration with the client's rate budget raised: the admin action runs
    the walk through the real upstream client, whose bucket (shared through Redis when REDIS_URL
    is set) other tests may have spent."""
    from eco_core import config as eco_config

    cfg = eco_config.load_config(env={"ECO_MCP_ECO__BASE_URL": fresh_sim.base_url,
                                      "ECO_MCP_ECO__GRAPHQL_URL": fresh_sim.graphql_url,
                                      "ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_BURST": "100000",
                                      "ECO_MCP_ECO__RATE_LIMIT__ANONYMOUS_RPS": "10000"}, warn=False)
    with eco_config.use_config(cfg):
        yield cfg


def test_admin_refresh_now_walks_the_sites_and_the_freshness_pages_show_the_progress(
        roomy_budget, admin_client, fresh_sim):
    sites = len(_keep_sites(fresh_sim, 3))
    changelist = reverse("admin:catalog_catalogstate_changelist")
    before = admin_client.get(reverse("admin:index")).content.decode()
    assert ">subtrees</a>" in before and "never built" in before
    resp = admin_client.post(changelist, {"action": "refresh_now", "_selected_action": [SUBTREES]}, follow=True)
    messages = [str(m) for m in resp.context["messages"]]
    total = LocationNodeRow.objects.count()
    assert LocationNodeRow.objects.filter(depth=0).count() == sites and total > sites
    assert any(m.startswith(f"subtrees: {total} rows from rest+gql") for m in messages), messages
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert f"{sites}/{sites} sites" in index and "(refreshing)" not in index
    assert f"{sites}/{sites} sites" in admin_client.get(changelist).content.decode()
    live = run_lock.try_hold(SUBTREES)  # a walk under way, in another process as far as the pages know
    assert live is not None
    try:
        CatalogState.objects.filter(catalog=SUBTREES).update(progress_done=12, progress_at=datetime.now(UTC))
        assert f"12/{sites} sites (refreshing)" in admin_client.get(changelist).content.decode()
        assert f"12/{sites} sites (refreshing)" in admin_client.get(reverse("admin:index")).content.decode()
    finally:
        live.release()
    nodes = admin_client.get(reverse("admin:catalog_locationnoderow_changelist") + "?q=HARV&depth__exact=1")
    assert nodes.status_code == 200 and nodes.context["cl"].result_count == len(
        fresh_sim.state.locations.children(fresh_sim.state.locations.get("HARV")))


@pytest.mark.django_db(transaction=True)  # eco_ping reads the status on a worker thread: committed rows
def test_eco_ping_reports_the_subtrees_freshness_and_progress(locations_built, mini_client, eco_cfg, fresh_sim):
    sites = len(_keep_sites(fresh_sim, 2))
    outcome = _refresh(mini_client)
    spec = default_registry().get("eco_ping")
    assert spec is not None
    call = CallContext(cfg=eco_cfg, transport="stdio", protocol_version="2026-07-28")
    result = async_to_sync(execute)(spec, {}, call, token=None)
    entry = result.structured_content["catalog"]["catalogs"][SUBTREES]
    assert entry["count"] == outcome.rows and entry["stale"] is False and "upstreamMismatch" not in entry
    assert (entry["sitesDone"], entry["sitesTotal"], entry["refreshing"]) == (sites, sites, False)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_celery_worker_and_beat_run_the_scheduled_subtree_refresh(postgres_url, redis_url, fresh_sim, tmp_path):
    require_postgres()
    _wipe()
    client = MiniClient(fresh_sim.base_url, fresh_sim.graphql_url)
    assert all(o.ok for o in async_to_sync(refresh_catalogs)(("locations",), client=client))
    output = run_beat_entry(
        SUBTREES_PERIODIC_TASK_NAME, redis_url=redis_url, sim=fresh_sim, tmp_path=tmp_path,
        done=lambda: CatalogRefresh.objects.filter(catalog=SUBTREES, trigger="beat").exists(),
    )
    log = CatalogRefresh.objects.filter(catalog=SUBTREES, trigger="beat").first()
    assert log is not None and log.ok, (log and log.error, output[-4000:])
    assert LocationNodeRow.objects.filter(depth=0).count() == len(fresh_sim.world.sites)
    assert LocationNodeRow.objects.count() == log.rows


@pytest.mark.django_db(transaction=True)  # outside a transaction, as a serving process walks
def test_a_subtree_walk_closes_the_database_connection_it_wrote_through(mini_client, eco_cfg, fresh_sim, fresh_index):
    from django.db import connection

    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("Django never closes an in-memory SQLite database: run with DATABASE_URL")
    assert all(o.ok for o in async_to_sync(refresh_catalogs)(("locations",), client=mini_client, cfg=eco_cfg))
    _keep_sites(fresh_sim, 2)
    assert connection.connection is not None
    assert _refresh(mini_client).ok
    assert connection.connection is None
    assert LocationNodeRow.objects.filter(depth=0).count() == 2
