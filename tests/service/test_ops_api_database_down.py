"""The ops API with the catalog database unreachable: JSON 503 with a code, not Django's HTML
500, and the driver's message (which can carry the connection string) never in the answer or the
log. The real outage is in tests/reliability/test_fault_matrix_database.py."""

from __future__ import annotations

import logging

import pytest
from django.db import InterfaceError, OperationalError

from catalog.models import CatalogRefresh
from eco_core import config as eco_config
from eco_service import ops_api

TOKEN = "ops-token-for-tests-0123456789"
DRIVER_MESSAGE = 'connection to server at "db.internal" (10.0.0.5), port 5432 failed: user "eco-secret-user"'


@pytest.fixture
def ops_cfg(active_config):
    return active_config(eco_config.load_config(env={"ECO_MCP_SERVER__OPS_TOKEN": TOKEN}, warn=False))


@pytest.mark.parametrize("exc", [OperationalError(DRIVER_MESSAGE), InterfaceError("connection already closed")],
                         ids=["refused", "closed"])
def test_an_unreachable_database_is_a_json_503_naming_the_database(exc, ops_cfg, client, db, monkeypatch, caplog):
    def down(*args, **kwargs):
        raise exc

    caplog.set_level(logging.INFO)
    monkeypatch.setattr(ops_api, "catalog_status", down)
    monkeypatch.setattr(CatalogRefresh.objects, "all", down)
    for path in ("/api/ops/catalogs", "/api/ops/refresh-log"):
        resp = client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert resp.status_code == 503, (path, resp.content[:300])
        assert resp["Content-Type"].startswith("application/json")
        assert resp.json() == {"code": "database_unavailable", "detail": ops_api.DATABASE_UNAVAILABLE}
    assert "db.internal" not in caplog.text and "eco-secret-user" not in caplog.text


def test_the_503_is_declared_in_the_openapi_document(ops_cfg, client, db):
    doc = client.get("/api/ops/openapi.json").json()
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            assert "503" in op["responses"], (method, path)
