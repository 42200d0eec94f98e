"""Catalog refresh against the simulator: sources, parity, request counts, and failures that
must leave the previous catalog in place."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from catalog.models import (
    CatalogRefresh,
    CatalogState,
    LocationRow,
    ProductRow,
    ProductSiteAvailabilityRow,
    ReleaseRow,
    SiteRow,
)
from catalog.services import build, refresh_catalog, refresh_catalogs

refresh_all = async_to_sync(refresh_catalogs)
refresh_one = async_to_sync(refresh_catalog)
TABLES = (ProductRow, ProductSiteAvailabilityRow, SiteRow, ReleaseRow, LocationRow)


def snapshot() -> dict[str, list[dict]]:
    out = {}
    for model in TABLES:
        rows = [{k: v for k, v in r.items() if k != "id"} for r in model.objects.values()]
        out[model.__name__] = sorted(rows, key=repr)
    return out


def test_graphql_and_rest_build_the_same_catalog(db, mini_client, eco_cfg):
    via_graphql = refresh_all(client=mini_client, source="graphql", cfg=eco_cfg)
    assert [o.source for o in via_graphql] == ["graphql", "graphql", "rest", "rest"]
    first = snapshot()
    via_rest = refresh_all(client=mini_client, source="rest", cfg=eco_cfg)
    assert all(o.ok and o.source == "rest" for o in via_rest)
    second = snapshot()
    assert len(first["ProductRow"]) > 150 and len(first["SiteRow"]) == 81
    assert len(first["ProductSiteAvailabilityRow"]) > 1000
    for table in first:
        assert first[table] == second[table], table


def test_full_refresh_takes_four_requests_from_graphql_and_five_from_rest(db, mini_client, eco_cfg):
    outcomes = refresh_all(client=mini_client, cfg=eco_cfg)
    assert sum(o.requests for o in outcomes) == 4
    assert len(mini_client.calls) == 4 and sum("/graphql" in c for c in mini_client.calls) == 1
    mini_client.calls.clear()
    outcomes = refresh_all(client=mini_client, source="rest", cfg=eco_cfg)
    assert sum(o.requests for o in outcomes) == 5 == len(mini_client.calls)


def test_graphql_outage_falls_back_to_rest(db, mini_client, eco_cfg, fresh_sim):
    fresh_sim.faults.add("graphql_outage")
    outcomes = refresh_all(("products", "sites"), client=mini_client, cfg=eco_cfg)
    assert [(o.catalog, o.ok, o.source) for o in outcomes] == [("products", True, "rest"), ("sites", True, "rest")]
    assert ProductRow.objects.count() > 150


def test_open_graphql_breaker_goes_straight_to_rest(db, mini_client, eco_cfg):
    mini_client.graphql_available = False
    outcomes = refresh_all(("products",), client=mini_client, cfg=eco_cfg)
    assert outcomes[0].source == "rest" and outcomes[0].ok
    assert not any("/graphql" in c for c in mini_client.calls)


def test_forced_graphql_does_not_fall_back(db, mini_client, eco_cfg, fresh_sim):
    fresh_sim.faults.add("graphql_outage")
    outcome = refresh_one("products", client=mini_client, source="graphql", cfg=eco_cfg)
    assert not outcome.ok and outcome.source == "graphql"
    assert not any("/api/v0/products" in c for c in mini_client.calls)


@pytest.fixture
def built(db, mini_client, eco_cfg):
    outcomes = refresh_all(("products", "releases"), client=mini_client, cfg=eco_cfg)
    assert all(o.ok for o in outcomes)
    return snapshot(), {s.catalog: s.version for s in CatalogState.objects.all()}


def test_upstream_outage_keeps_the_old_catalog_and_logs_the_failure(built, mini_client, eco_cfg, fresh_sim):
    before, versions = built
    fresh_sim.faults.add("graphql_outage")
    fresh_sim.faults.add("status", route=r"^/api/v0/(products|releases)$", status=503)
    outcomes = refresh_all(("products", "releases"), client=mini_client, cfg=eco_cfg)
    assert [o.ok for o in outcomes] == [False, False]
    assert snapshot() == before
    state = CatalogState.objects.get(catalog="products")
    assert state.version == versions["products"] and "upstream_error" in state.last_error
    log = CatalogRefresh.objects.filter(catalog="products").latest()
    assert not log.ok and log.source == "rest" and log.error


def test_reply_missing_a_relied_on_field_keeps_the_old_catalog(built, mini_client, eco_cfg, fresh_sim):
    before, _ = built
    fresh_sim.faults.add("status", route=r"^/api/v0/products$", status=200,
                         body={"data": [{"productCode": "DP1.00001.001", "productStatus": "ACTIVE"}]})
    outcome = refresh_one("products", client=mini_client, source="rest", cfg=eco_cfg)
    assert not outcome.ok and "productName" in outcome.error
    assert snapshot() == before


def test_empty_product_list_is_refused_and_the_old_catalog_kept(built, mini_client, eco_cfg, fresh_sim):
    before, _ = built
    fresh_sim.faults.add("status", route=r"^/api/v0/products$", status=200, body={"data": []})
    outcome = refresh_one("products", client=mini_client, source="rest", cfg=eco_cfg)
    assert not outcome.ok and "empty" in outcome.error
    assert snapshot() == before


def test_failure_in_the_middle_of_the_swap_leaves_the_old_catalog(built, mini_client, eco_cfg, monkeypatch):
    before, versions = built
    real = build.build_products

    def products_then_a_broken_cell(records):
        products, cells = real(records)
        cells[-1].first_month = None  # NOT NULL: the insert fails after products were replaced
        return products, cells

    monkeypatch.setattr(build, "build_products", products_then_a_broken_cell)
    outcome = refresh_one("products", client=mini_client, cfg=eco_cfg)
    assert not outcome.ok and "IntegrityError" in outcome.error
    assert snapshot() == before
    assert CatalogState.objects.get(catalog="products").version == versions["products"]


def test_successful_refresh_is_logged_with_rows_requests_and_seconds(db, mini_client, eco_cfg):
    # Rows a server thread of an earlier test committed may be there: this refresh's own is judged.
    earlier = set(CatalogRefresh.objects.values_list("id", flat=True))
    before = CatalogState.objects.filter(catalog="releases").values_list("version", flat=True).first() or 0
    refresh_one("releases", client=mini_client, trigger="manual", cfg=eco_cfg)
    log = CatalogRefresh.objects.exclude(id__in=earlier).get(catalog="releases")
    assert (log.ok, log.source, log.rows, log.upstream_requests, log.trigger) == (True, "rest", 6, 1, "manual")
    assert log.seconds is not None and log.seconds >= 0
    state = CatalogState.objects.get(catalog="releases")
    assert state.version == before + 1 and state.row_count == 6 and state.last_error == ""


def test_unknown_catalog_name_is_invalid_argument(db, mini_client, eco_cfg):
    from eco_core.errors import EcoError

    with pytest.raises(EcoError) as exc:
        refresh_one("taxa", client=mini_client, cfg=eco_cfg)
    assert exc.value.code == "invalid_argument"


@pytest.mark.django_db(transaction=True)  # outside a transaction, as a serving process builds
def test_a_catalog_build_closes_the_database_connection_it_wrote_through(mini_client, eco_cfg):
    from django.db import connection

    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("Django never closes an in-memory SQLite database: run with DATABASE_URL")
    CatalogState.objects.count()  # a connection open before the build, as a serving process has
    assert connection.connection is not None
    outcomes = refresh_all(client=mini_client, cfg=eco_cfg)
    assert all(o.ok for o in outcomes)
    assert connection.connection is None
    assert ProductRow.objects.count() > 150  # the next read opens a connection of its own


def test_a_build_inside_a_callers_transaction_keeps_its_connection(db, mini_client, eco_cfg):
    from django.db import connection

    assert all(o.ok for o in refresh_all(("releases",), client=mini_client, cfg=eco_cfg))
    assert connection.connection is not None and connection.in_atomic_block
