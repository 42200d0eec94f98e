"""Celery: the beat entry exists after migrate, the task runs in-process without a broker, and a
real worker + beat (Redis broker, the test database on PostgreSQL) runs the scheduled refresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationNodeRow, LocationRow, ProductRow, SiteRow
from catalog.schedule import PERIODIC_TASK_NAME, ensure_refresh_schedule
from catalog.tasks import TASK_NAME, refresh_catalogs_task
from tests.catalog.celery_worker import require_postgres, run_beat_entry
from tests.catalog.conftest import _wipe

ROOT = Path(__file__).resolve().parents[2]


def test_beat_schedule_exists_after_migrate_with_the_catalog_ttl(db, eco_cfg):
    task = PeriodicTask.objects.get(name=PERIODIC_TASK_NAME)
    assert task.task == TASK_NAME and task.enabled
    assert (task.interval.every, task.interval.period) == (eco_cfg.cache.ttl_s.catalog, IntervalSchedule.SECONDS)
    assert json.loads(task.kwargs) == {"trigger": "beat"}


def test_an_interval_changed_in_the_admin_survives_the_next_migrate(db):
    task = PeriodicTask.objects.get(name=PERIODIC_TASK_NAME)
    task.interval = IntervalSchedule.objects.create(every=600, period=IntervalSchedule.SECONDS)
    task.save()
    ensure_refresh_schedule()
    assert PeriodicTask.objects.get(name=PERIODIC_TASK_NAME).interval.every == 600


def test_task_without_a_broker_runs_in_process(db, sim_cfg, fresh_index):
    result = refresh_catalogs_task.delay(catalogs=["releases"], trigger="manual").get()
    assert result[0]["catalog"] == "releases" and result[0]["ok"] and result[0]["rows"] == 6
    assert CatalogRefresh.objects.get(catalog="releases").trigger == "manual"


def test_refresh_command_prints_rows_requests_and_seconds(db, sim_cfg, fresh_index, capsys):
    call_command("eco_catalog_refresh", "--catalog", "releases", "--catalog", "locations", "--source", "rest")
    out = capsys.readouterr().out
    assert "releases   ok" in out and "rows=6" in out and "source=rest" in out
    assert "locations  ok" in out and "total: requests=" in out and "seconds=" in out


def test_refresh_command_json_and_failure_exit_status(db, sim_cfg, fresh_sim, fresh_index, capsys):
    fresh_sim.faults.add("status", route=r"^/api/v0/releases$", status=503)
    with pytest.raises(SystemExit) as exc:
        call_command("eco_catalog_refresh", "--catalog", "releases", "--json")
    assert exc.value.code == 1
    body = json.loads(capsys.readouterr().out)
    assert body["catalogs"][0]["ok"] is False and "503" in body["catalogs"][0]["error"]


def test_refresh_command_leaves_the_subtrees_out_unless_named(db, sim_cfg, fresh_sim, fresh_index, capsys):
    fresh_sim.faults.add("status", route=r".", status=400)  # every catalog fails at once (no retries)
    with pytest.raises(SystemExit):
        call_command("eco_catalog_refresh", "--json")
    body = json.loads(capsys.readouterr().out)
    assert [o["catalog"] for o in body["catalogs"]] == ["products", "sites", "releases", "locations"]
    assert fresh_sim.requests.count(r"^/api/v0/locations/[A-Z]{4}$") == 0


def test_refresh_command_walks_the_subtrees_when_named_after_a_locations_catalog_named_with_them(
        db, sim_cfg, fresh_sim, fresh_index, capsys):
    fresh_sim.faults.add("status", route=r"^/api/v0/locations/[A-Z]{4}$", status=400)  # any site's subtree
    with pytest.raises(SystemExit):
        call_command("eco_catalog_refresh", "--catalog", "subtrees", "--catalog", "locations", "--json")
    body = json.loads(capsys.readouterr().out)
    assert [(o["catalog"], o["ok"]) for o in body["catalogs"]] == [("locations", True), ("subtrees", False)]
    assert "400" in body["catalogs"][1]["error"]
    # The walk started on the SITE rows the locations refresh had just built.
    assert CatalogState.objects.get(catalog=SUBTREES).progress_total == 81
    fresh_sim.faults.clear()
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=("BART", "HARV")).delete()  # a short walk
    call_command("eco_catalog_refresh", "--catalog", "subtrees")
    out = capsys.readouterr().out
    nodes = LocationNodeRow.objects.count()
    assert f"subtrees   ok      source=rest+gql rows={nodes} " in out and nodes > 2 and "total: requests=" in out
    assert CatalogRefresh.objects.filter(catalog=SUBTREES, ok=True).get().trigger == "command"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_celery_worker_and_beat_run_the_scheduled_refresh(postgres_url, redis_url, fresh_sim, tmp_path):
    require_postgres()
    _wipe()
    output = run_beat_entry(
        PERIODIC_TASK_NAME, redis_url=redis_url, sim=fresh_sim, tmp_path=tmp_path,
        done=lambda: CatalogRefresh.objects.filter(trigger="beat", catalog="sites", ok=True).exists(),
    )
    assert CatalogRefresh.objects.filter(trigger="beat", ok=True).exists(), output[-4000:]
    assert ProductRow.objects.count() > 150 and SiteRow.objects.count() == 81
