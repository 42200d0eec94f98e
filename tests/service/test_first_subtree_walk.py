"""With a broker nothing but beat walks the location subtrees, and beat's first run is hours away:
each Celery worker queues the first walk as it starts. It walks when the subtrees are missing,
from another upstream or past their TTL, waits while there is no locations catalog to walk, and
leaves current ones to beat."""

# ruff: noqa: F811  (pytest fixtures imported from tests.catalog.conftest are parameters here)
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from catalog.models import SUBTREES, CatalogRefresh, CatalogState, LocationNodeRow, LocationRow
from catalog.services import refresh_catalogs
from catalog.services.location_subtrees import refresh_location_subtrees
from eco_service.tasks import first_walk_verdict
from tests.catalog.celery_worker import require_postgres
from tests.catalog.conftest import MiniClient, _wipe, fresh_index, sim_cfg  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


def _locations(sim) -> MiniClient:
    client = MiniClient(sim.base_url, sim.graphql_url)
    assert all(o.ok for o in async_to_sync(refresh_catalogs)(("locations",), client=client))
    # Two sites: a short walk.
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=("BART", "HARV")).delete()
    return client


def test_the_first_walk_waits_for_locations_walks_missing_or_foreign_subtrees_and_leaves_current_ones(
        db, sim_cfg, fresh_sim, fresh_index):
    assert first_walk_verdict() == "wait"  # no locations catalog yet: nothing to walk
    client = _locations(fresh_sim)
    assert first_walk_verdict() == "walk"  # none stored
    assert async_to_sync(refresh_location_subtrees)(client=client).ok
    assert first_walk_verdict() == "fresh"
    CatalogState.objects.filter(catalog=SUBTREES).update(rest_base="http://elsewhere.example/api/v0")
    assert first_walk_verdict() == "walk"  # built from another upstream: not served
    CatalogState.objects.filter(catalog=SUBTREES).update(
        rest_base=fresh_sim.base_url, refreshed_at=datetime.now(UTC) - timedelta(days=2))
    assert first_walk_verdict() == "walk"  # past its TTL


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_starting_with_a_broker_walks_empty_subtrees_without_beat(postgres_url, redis_url, fresh_sim,
                                                                          tmp_path):
    require_postgres()
    _wipe()
    _locations(fresh_sim)
    assert not LocationNodeRow.objects.exists()
    queue = f"eco-test-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "REDIS_URL", "CELERY_"))}
    env.update(DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
               CELERY_BROKER_URL=redis_url, ECO_MCP_ECO__BASE_URL=fresh_sim.base_url,
               ECO_MCP_ECO__GRAPHQL_URL=fresh_sim.graphql_url, DJANGO_SETTINGS_MODULE="eco_service.settings")
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as out:
        # No beat: only the worker's own start can have asked for the walk.
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "eco_service", "worker", "--pool=solo",
                                   "-Q", queue, "--loglevel=INFO", "-n", f"{queue}@%h"], cwd=ROOT, env=env,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and worker.poll() is None:
                if CatalogRefresh.objects.filter(catalog=SUBTREES).exists():
                    break
                time.sleep(0.5)
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    run = CatalogRefresh.objects.filter(catalog=SUBTREES).first()
    assert run is not None and run.ok and run.trigger == "start", log_path.read_text()[-4000:]
    assert LocationNodeRow.objects.filter(depth=0).count() == 2 and LocationNodeRow.objects.count() == run.rows
