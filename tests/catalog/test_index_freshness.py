"""The per-process index: served from memory between version checks, rebuilt when the catalog
version in the database moves, whichever process moved it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from catalog import index
from catalog.models import CatalogState, ReleaseRow
from families.products import SearchProductsInput, find_products
from tests.catalog.conftest import _wipe
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_searches_between_version_checks_cost_no_database_query(idx, django_assert_num_queries):
    clock = Clock()
    index.reset()
    first = index.get_index(clock=clock)
    with django_assert_num_queries(0):
        for q in ("soil", "wind", "temperature", "DP1.10003.001"):
            assert index.get_index(clock=clock) is first
            find_products(index.get_index(clock=clock), SearchProductsInput(query=q))


def test_unchanged_versions_keep_the_same_index_after_a_check(idx, django_assert_num_queries):
    clock = Clock()
    index.reset()
    first = index.get_index(clock=clock)
    clock.now += index.CHECK_INTERVAL_S + 0.1
    with django_assert_num_queries(1):
        assert index.get_index(clock=clock) is first


def test_a_swap_by_another_process_is_seen_after_the_check_interval(idx):
    clock = Clock()
    index.reset()
    before = index.get_index(clock=clock)
    # What another process's refresh leaves behind: new rows and a higher version, but no
    # mark_dirty() in this process.
    ReleaseRow.objects.filter(tag="RELEASE-2021").delete()
    CatalogState.objects.filter(catalog="releases").update(version=before.versions["releases"] + 1)
    assert index.get_index(clock=clock).releases[0].tag == "RELEASE-2021"
    clock.now += index.CHECK_INTERVAL_S + 0.1
    after = index.get_index(clock=clock)
    assert after is not before
    assert "RELEASE-2021" not in [r.tag for r in after.releases]


@pytest.mark.django_db(transaction=True)
def test_index_rebuilds_after_a_refresh_run_by_another_process(postgres_url, fresh_sim, fresh_index):
    if connection.vendor != "postgresql":
        reason = "needs the test database on PostgreSQL (DATABASE_URL) so a second process can see it"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    _wipe()
    index.reset()
    clock = Clock()
    empty = index.get_index(clock=clock)
    assert empty.releases == []
    db = connection.settings_dict
    env = dict(os.environ)
    env.pop("REDIS_URL", None)
    env.update(
        DATABASE_URL=f"postgresql://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        ECO_MCP_ECO__BASE_URL=fresh_sim.base_url,
        ECO_MCP_ECO__GRAPHQL_URL=fresh_sim.graphql_url,
        DJANGO_SETTINGS_MODULE="eco_service.settings",
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "eco_catalog_refresh", "--catalog", "releases"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "releases" in done.stdout and "rows=6" in done.stdout
    clock.now += index.CHECK_INTERVAL_S + 0.1
    assert [r.tag for r in index.get_index(clock=clock).releases] == [f"RELEASE-{y}" for y in range(2021, 2027)]
