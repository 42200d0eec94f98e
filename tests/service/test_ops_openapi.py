"""Property-based test of the ops API against its own OpenAPI document (schemathesis): for
generated requests of every operation, no 5xx, statuses, content types and bodies as declared."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings

from eco_core import config as eco_config
from eco_service import ops_api

TOKEN = "ops-token-for-schemathesis-0123"


schema = schemathesis.openapi.from_wsgi("/api/ops/openapi.json", get_wsgi_application())


@pytest.fixture(autouse=True)
def ops_setup(db, active_config, monkeypatch):
    active_config(eco_config.load_config(env={"ECO_MCP_SERVER__OPS_TOKEN": TOKEN}, warn=False))
    # Queued refreshes are recorded but not run: generated requests must not reach any upstream.
    monkeypatch.setattr(ops_api, "dispatch", lambda request_id: None)
    # As Django's test client does: the WSGI handler must not close the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


# One test per operation, each with its own id (METHOD path): schemathesis' own parametrize gave
# every operation the same node id, so pytest reported fewer outcomes than it ran tests.
OPERATIONS = [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_every_operation_conforms_to_its_openapi_document(operation):
    @given(case=operation.as_strategy())
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    def conforms(case):
        case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"})

    conforms()
