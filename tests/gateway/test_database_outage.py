"""An unreachable catalog database as the gateway answers it: a tool call that meets it answers
catalog_unavailable (retryable, naming the database, never the driver's message), any other
database error is still a bug, and eco_ping reports the database down instead of failing. The
real outage (a proxy in front of PostgreSQL killed mid-run) is tests/reliability/test_fault_matrix_database.py."""

from __future__ import annotations

import logging
from typing import Any

import jsonschema
import pytest
from django.db import InterfaceError, OperationalError, ProgrammingError

from catalog import status as catalog_status_mod
from eco_core.memo import memos
from families.call import CallContext
from mcp_gateway import calls
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.gateway.checks import assert_error
from tests.gateway.conftest import make_cfg
from tests.gateway.fakes import echo_spec

# What psycopg says when it cannot connect: the host, the user, sometimes more. Never shown.
DRIVER_MESSAGE = ('connection to server at "db.internal" (10.0.0.5), port 5432 failed: FATAL: password '
                  'authentication failed for user "eco-secret-user"')


def _raising(exc: Exception) -> Any:
    async def read(args: Any, call: CallContext) -> Any:
        raise exc

    return read


async def _run(spec: Any, arguments: dict[str, Any] | None = None) -> Any:
    call = CallContext(cfg=make_cfg(), transport="stdio", protocol_version="2026-07-28")
    return await execute(spec, arguments or {}, call, token=None)


@pytest.fixture(autouse=True)
def fresh_warning(monkeypatch):
    monkeypatch.setattr(calls, "_database_warned_at", None, raising=False)


@pytest.mark.parametrize("exc", [OperationalError(DRIVER_MESSAGE), InterfaceError("connection already closed")],
                         ids=["refused", "closed"])
async def test_a_call_that_finds_the_database_unreachable_answers_catalog_unavailable_naming_the_database(
        exc, caplog):
    caplog.set_level(logging.INFO)
    err = assert_error(await _run(echo_spec(read=_raising(exc))), "catalog_unavailable")
    assert err["retryable"] is True
    assert "database" in err["message"] and "database" in err["hint"]
    assert "upstream" not in err["hint"].lower()
    assert err["details"] == {"cause": type(exc).__name__}
    for text in (str(err), caplog.text):
        assert "db.internal" not in text and "eco-secret-user" not in text
    assert "internal_error" not in caplog.text


async def test_any_other_database_error_is_still_a_bug():
    err = assert_error(await _run(echo_spec(read=_raising(ProgrammingError("relation does not exist")))),
                       "internal_error")
    assert err["details"]["correlationId"]


async def test_an_outage_is_logged_once_not_once_a_call(caplog):
    caplog.set_level(logging.WARNING, logger="eco.gateway")
    spec = echo_spec(read=_raising(OperationalError(DRIVER_MESSAGE)))
    for _ in range(5):
        assert_error(await _run(spec), "catalog_unavailable")
    warnings = [r for r in caplog.records if "database unreachable" in r.getMessage()]
    assert len(warnings) == 1, caplog.text


@pytest.fixture
def status_of(monkeypatch):
    """`status_of(fn)`: eco_ping's catalog status comes from `fn` (fresh: no status kept)."""

    def use(fn: Any) -> None:
        monkeypatch.setattr(catalog_status_mod, "catalog_status", fn)
        memos.drop_all()

    return use


async def _ping() -> dict[str, Any]:
    spec = default_registry().get("eco_ping")
    assert spec is not None
    result = await _run(spec)
    assert not result.is_error, result.structured_content
    jsonschema.Draft202012Validator(spec.tool.output_schema).validate(result.structured_content)
    return result.structured_content


async def test_eco_ping_reports_the_database_down_and_up_again_instead_of_failing(status_of, active_config):
    active_config(make_cfg())

    def down(cfg: Any) -> dict[str, Any]:
        raise OperationalError(DRIVER_MESSAGE)

    status_of(down)
    body = await _ping()
    assert body["catalog"]["database"] == "down"
    assert body["catalog"]["ready"] is False and body["catalog"]["catalogs"] == {}
    assert "db.internal" not in str(body)

    status_of(lambda cfg: {"ready": True, "degraded": False,
                           "products": {"count": 3, "ageSeconds": 1, "source": "graphql", "stale": False}})
    body = await _ping()
    assert body["catalog"]["database"] == "up" and body["catalog"]["ready"] is True
    assert body["catalog"]["catalogs"]["products"]["count"] == 3


@pytest.mark.django_db
async def test_catalog_tools_are_answered_from_the_held_index_while_the_database_is_unreachable(monkeypatch):
    import catalog.services
    from catalog import access as catalog_access
    from catalog import index

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError(DRIVER_MESSAGE)

    cfg = make_cfg()
    index.reset()
    try:
        held = await catalog_access.catalog_read(index.get_index)
        monkeypatch.setattr(catalog.services, "due_catalogs", refused)
        monkeypatch.setattr(index, "_read_versions", refused)
        monkeypatch.setattr(index, "_checked_at", 0.0)  # the next use checks the database
        assert await catalog_access.catalog_index(cfg, object()) is held
        index.reset()  # nothing held: the outage stands, for the call to answer catalog_unavailable
        monkeypatch.setattr(catalog_access, "_not_due", (None, 0.0))
        with pytest.raises(OperationalError):
            await catalog_access.catalog_index(cfg, object())
    finally:
        index.reset()
