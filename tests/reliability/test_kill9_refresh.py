"""kill -9 of `manage.py eco_catalog_refresh` mid-build, on real PostgreSQL, against the simulator
over real sockets: the previous version of every catalog stays whole and is what readers see,
nothing is left claiming a refresh is under way, and the next refresh completes.

Two moments: while the refresh waits for the upstream (the simulator holds its GraphQL request,
which its request log shows arrived), and inside the swap transaction itself, after it deleted
the old rows (its INSERT waits on a row of the same name the test has not committed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.reliability.kill9_support import (
    drop_shared,
    kill9_and_reap,
    query,
    refresh_json,
    run,
    shared_pg,
    sim_env,
    spawn,
    wait_until,
)

TABLES = {"products": ("catalog_product", "catalog_productsiteavailability"), "sites": ("catalog_site",),
          "releases": ("catalog_release",), "locations": ("catalog_location",)}

COLUMNS = ("name, location_type, description, domain_code, site_code, parent, latitude, longitude, elevation, "
           "utm_easting, utm_northing, utm_zone, utm_hemisphere")

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="session")
def catalog_db(postgres_url: str, sim: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield shared_pg(postgres_url, tmp_path_factory.mktemp("kill9-shared"), sim)
    drop_shared()


def snapshot(url: str) -> dict[str, Any]:
    """Each catalog's state row and, per table, how many rows and which ones (by primary key: a
    rebuilt table has new keys even when the simulator sends the same records)."""
    states = {r[0]: r[1:] for r in query(url, "SELECT catalog, version, row_count, refreshed_at, last_error, "
                                              "last_attempt_at FROM catalog_catalogstate")}
    tables = {t: query(url, f"SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM {t}")[0]
              for names in TABLES.values() for t in names}
    log = query(url, "SELECT count(*), count(*) FILTER (WHERE ok) FROM catalog_catalogrefresh")[0]
    return {"states": states, "tables": tables, "refresh_log": log}


def assert_whole(snap: dict[str, Any]) -> None:
    """Every catalog is served: built, no error recorded, and its row count is its table's."""
    for catalog, names in TABLES.items():
        version, row_count, refreshed_at, last_error, _ = snap["states"][catalog]
        assert version >= 1 and refreshed_at is not None and last_error == "", catalog
        assert snap["tables"][names[0]][0] == row_count > 0, catalog


def _env(sim: Any, url: str, tmp_path: Path) -> dict[str, str]:
    return sim_env(sim, DATABASE_URL=url, ECO_MCP_DATA_DIR=str(tmp_path / "data"))


def _backend_waiting_on(url: str, statement: str) -> int | None:
    rows = query(url, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                      "AND wait_event_type = 'Lock' AND query ILIKE %s", (statement + "%",))
    return rows[0][0] if rows else None


def test_a_refresh_killed_inside_its_swap_or_while_fetching_leaves_every_catalog_whole_and_the_next_one_completes(
        catalog_db: str, fresh_sim: Any, tmp_path: Path) -> None:
    # The witness of the old version: one location renamed, so the new build's copy of that row
    # (the simulator's name) is an insert the test can hold up with an uncommitted row of the same
    # name. The refresh then waits inside its swap transaction, having deleted every old row and
    # inserted none of the new yet visible.
    [(name,)] = query(catalog_db, "UPDATE catalog_location SET name = name || '~old' "
                                  "WHERE id = (SELECT max(id) FROM catalog_location) RETURNING name")
    before = snapshot(catalog_db)
    assert_whole(before)
    env = _env(fresh_sim, catalog_db, tmp_path)

    # 1. Inside the swap.
    with psycopg.connect(catalog_db) as holder:
        holder.execute(f"INSERT INTO catalog_location ({COLUMNS}) SELECT %s, {COLUMNS.split(', ', 1)[1]} "
                       "FROM catalog_location WHERE name = %s", (name.removesuffix("~old"), name))
        log = tmp_path / "swap.log"
        proc = spawn(["eco_catalog_refresh", "--catalog", "locations", "--json"], env, log)
        backend = wait_until(lambda: _backend_waiting_on(catalog_db, 'INSERT INTO "catalog_location"'),
                             "the refresh's INSERT waiting on the held name", alive=proc, log=log)
        # Mid-transaction: what it deleted is still there for every other reader.
        assert snapshot(catalog_db) == before
        kill9_and_reap(proc, log)
        holder.rollback()
    # The dead client's backend finishes its statement, finds nobody to answer and rolls back.
    wait_until(lambda: not query(catalog_db, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)),
               "the killed refresh's database session ending")
    assert snapshot(catalog_db) == before

    # 2. While fetching: the simulator holds the GraphQL catalog request (products and sites).
    fresh_sim.faults.add("latency", route=r"^/graphql", count=1, delay_s=60)
    log = tmp_path / "fetch.log"
    proc = spawn(["eco_catalog_refresh", "--json"], env, log)
    wait_until(lambda: fresh_sim.requests.count(r"^/graphql") >= 1, "the refresh's GraphQL request", alive=proc,
               log=log)
    kill9_and_reap(proc, log)
    assert snapshot(catalog_db) == before
    fresh_sim.faults.clear()

    # 3. Nothing the dead processes left (a row lock, a state, a log entry) holds the next one up.
    log = tmp_path / "after.log"
    assert run(["eco_catalog_refresh", "--json"], env, log) == 0, log.read_text()
    outcomes = {o["catalog"]: o for o in refresh_json(log)["catalogs"]}
    after = snapshot(catalog_db)
    assert_whole(after)
    for catalog, names in TABLES.items():
        assert outcomes[catalog]["ok"] and outcomes[catalog]["version"] == before["states"][catalog][0] + 1, catalog
        assert after["states"][catalog][0] == before["states"][catalog][0] + 1, catalog
        for table in names:
            assert after["tables"][table][1] != before["tables"][table][1], f"{table} was not rebuilt"
    # The killed runs logged nothing; the completed one logged one success per catalog.
    assert after["refresh_log"] == (before["refresh_log"][0] + 4, before["refresh_log"][1] + 4)
