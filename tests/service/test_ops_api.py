"""The ops API under /api/ops/: who may use it, what it reports, and queued refreshes."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from catalog.models import CatalogRefresh
from eco_core import config as eco_config
from eco_service import ops_api

TOKEN = "ops-token-for-tests-0123456789"
OPEN_GETS = ["/api/ops/catalogs", "/api/ops/refresh-log", "/api/ops/upstream/cache",
             "/api/ops/upstream/rate-limit", "/api/ops/upstream/graphql-breaker"]


def _cfg(**env: str) -> eco_config.EcoConfig:
    return eco_config.load_config(env={"ECO_MCP_SERVER__OPS_TOKEN": TOKEN, **env}, warn=False)


@pytest.fixture
def ops_cfg(active_config):
    return active_config(_cfg())


@pytest.fixture
def staff_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_user("ops", password="x", is_staff=True))
    return client


@pytest.fixture
def user_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_user("reader", password="x", is_staff=False))
    return client


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.mark.parametrize("path", OPEN_GETS)
def test_auth_matrix_anonymous_401_non_staff_403_staff_and_token_200_wrong_token_401(
        path, ops_cfg, staff_client, user_client, client):
    assert client.get(path).status_code == 401
    assert client.get(path, **_bearer(TOKEN + "x")).status_code == 401
    assert client.get(path, HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    assert user_client.get(path).status_code == 403
    assert staff_client.get(path).status_code == 200
    assert client.get(path, **_bearer(TOKEN)).status_code == 200


def test_without_an_ops_token_setting_no_bearer_token_is_accepted(active_config, client, db):
    active_config(eco_config.load_config(env={}, warn=False))
    assert client.get("/api/ops/catalogs", **_bearer(TOKEN)).status_code == 401
    assert client.get("/api/ops/catalogs", **_bearer("")).status_code == 401


def test_every_operation_in_the_openapi_document_refuses_anonymous_callers(ops_cfg, client, db):
    doc = client.get("/api/ops/openapi.json").json()
    assert doc["components"]["securitySchemes"]["OpsToken"] == {"type": "http", "scheme": "bearer"}
    for path, ops in doc["paths"].items():
        for method in ops:
            url = path.replace("{refresh_id}", "abc")
            resp = client.generic(method.upper(), url, "{}", content_type="application/json")
            assert resp.status_code == 401, (method, path)


def test_a_staff_session_must_pass_csrf_to_queue_a_refresh(ops_cfg, db, monkeypatch):
    started: list[str] = []
    monkeypatch.setattr(ops_api, "dispatch", started.append)
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_user("ops", password="x", is_staff=True))
    resp = client.post("/api/ops/refreshes", {}, content_type="application/json")
    assert resp.status_code == 403 and started == []
    # A machine with the token has no cookie to forge, so it needs no CSRF token.
    resp = client.post("/api/ops/refreshes", {}, content_type="application/json", **_bearer(TOKEN))
    assert resp.status_code == 202 and started == [resp.json()["id"]]


def test_the_token_never_appears_in_log_lines(ops_cfg, client, db, caplog):
    caplog.set_level("DEBUG")
    client.get("/api/ops/catalogs", **_bearer(TOKEN))
    client.get("/api/ops/catalogs", HTTP_AUTHORIZATION=f"Token {TOKEN}")
    client.get("/api/ops/catalogs", **_bearer(TOKEN[:-1]))
    assert TOKEN[:-1] not in caplog.text


def test_refresh_log_pages_newest_first_and_filters_by_catalog(ops_cfg, client, db):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(5):
        CatalogRefresh.objects.create(catalog="sites" if i % 2 else "products", started_at=t0 + timedelta(minutes=i),
                                      finished_at=t0 + timedelta(minutes=i, seconds=3), ok=True, rows=i, source="rest")
    first = client.get("/api/ops/refresh-log?limit=2", **_bearer(TOKEN)).json()
    assert first["total"] == 5 and first["nextOffset"] == 2
    assert [e["rows"] for e in first["items"]] == [4, 3] and first["items"][0]["seconds"] == 3.0
    last = client.get("/api/ops/refresh-log?limit=2&offset=4", **_bearer(TOKEN)).json()
    assert [e["rows"] for e in last["items"]] == [0] and last["nextOffset"] is None
    sites = client.get("/api/ops/refresh-log?catalog=sites", **_bearer(TOKEN)).json()
    assert {e["catalog"] for e in sites["items"]} == {"sites"} and sites["total"] == 2
    bad = client.get("/api/ops/refresh-log?limit=0", **_bearer(TOKEN))
    assert bad.status_code == 422 and "limit" in bad.content.decode()


def test_an_unknown_refresh_id_is_404(ops_cfg, client, db):
    resp = client.get("/api/ops/refreshes/nope", **_bearer(TOKEN))
    assert resp.status_code == 404 and "nope" in resp.json()["detail"]


def test_queue_rejects_an_unknown_catalog_naming_the_field(ops_cfg, client, db, monkeypatch):
    monkeypatch.setattr(ops_api, "dispatch", lambda _id: None)
    resp = client.post("/api/ops/refreshes", {"catalogs": ["planets"]}, content_type="application/json",
                       **_bearer(TOKEN))
    assert resp.status_code == 422 and "catalogs" in resp.content.decode()


def test_with_a_broker_the_refresh_goes_to_celery_and_its_state_is_read_by_id(ops_cfg, client, db, monkeypatch,
                                                                                settings):
    from eco_service import tasks

    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    queued: list[list[str]] = []
    monkeypatch.setattr(tasks.ops_refresh_task, "apply_async", lambda args: queued.append(args))
    ran: list[dict] = []

    def fake_refresh(**kwargs):
        ran.append(kwargs)
        return [{"catalog": "sites", "ok": True, "rows": 3, "source": "rest", "requests": 1, "seconds": 0.1}]

    monkeypatch.setattr("catalog.tasks.refresh_catalogs_task", fake_refresh)
    resp = client.post("/api/ops/refreshes", {"catalogs": ["sites"], "source": "rest"},
                       content_type="application/json", **_bearer(TOKEN))
    assert resp.status_code == 202
    body = resp.json()
    assert body["state"] == "queued" and body["runner"] == "celery" and queued == [[body["id"]]]
    assert client.get(f"/api/ops/refreshes/{body['id']}", **_bearer(TOKEN)).json()["state"] == "queued"
    tasks.ops_refresh_task(body["id"])  # what the worker runs
    assert ran == [{"catalogs": ["sites"], "source": "rest", "trigger": "ops"}]
    done = client.get(f"/api/ops/refreshes/{body['id']}", **_bearer(TOKEN)).json()
    assert done["state"] == "succeeded" and done["outcomes"][0]["rows"] == 3 and done["finishedAt"]


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_the_refresh_runs_in_process_against_the_configured_upstream(sim, active_config, client):
    active_config(_cfg(ECO_MCP_ECO__BASE_URL=sim.base_url, ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url))
    resp = client.post("/api/ops/refreshes", {"catalogs": ["sites", "releases"]}, content_type="application/json",
                       **_bearer(TOKEN))
    assert resp.status_code == 202 and resp.json()["runner"] == "in_process"
    rid = resp.json()["id"]
    deadline = time.monotonic() + 120
    while (state := client.get(f"/api/ops/refreshes/{rid}", **_bearer(TOKEN)).json())["state"] in ("queued",
                                                                                                   "running"):
        assert time.monotonic() < deadline, state
        time.sleep(0.2)
    assert state["state"] == "succeeded", state
    assert [o["catalog"] for o in state["outcomes"]] == ["sites", "releases"]
    log = client.get("/api/ops/refresh-log", **_bearer(TOKEN)).json()
    assert {(e["catalog"], e["trigger"], e["ok"]) for e in log["items"]} == {("sites", "ops", True),
                                                                             ("releases", "ops", True)}
    fresh = {c["catalog"]: c for c in client.get("/api/ops/catalogs", **_bearer(TOKEN)).json()["catalogs"]}
    assert fresh["sites"]["rows"] > 0 and fresh["sites"]["ageSeconds"] is not None
    assert fresh["products"]["rows"] == 0
    if "restBase" in fresh["sites"] and fresh["sites"]["restBase"] is not None:
        assert fresh["sites"]["restBase"] == sim.base_url


def test_breaker_and_budget_report_this_process_state(ops_cfg, client, db):
    breaker = client.get("/api/ops/upstream/graphql-breaker", **_bearer(TOKEN)).json()
    assert breaker["state"] == "closed" and breaker["threshold"] == ops_cfg.eco.graphql_breaker_failures
    budget = client.get("/api/ops/upstream/rate-limit", **_bearer(TOKEN)).json()
    assert budget["budgetBurst"] == ops_cfg.eco.rate_limit.anonymous_burst and budget["identity"] == "anonymous"


def test_the_location_subtrees_are_refreshed_only_when_named_and_after_the_locations_catalog(ops_cfg, client, db,
                                                                                              monkeypatch):
    monkeypatch.setattr(ops_api, "dispatch", lambda _id: None)
    default = client.post("/api/ops/refreshes", {}, content_type="application/json", **_bearer(TOKEN)).json()
    assert default["catalogs"] == ["products", "sites", "releases", "locations"]
    both = client.post("/api/ops/refreshes", {"catalogs": ["subtrees", "locations"]}, content_type="application/json",
                       **_bearer(TOKEN))
    assert both.status_code == 202 and both.json()["catalogs"] == ["locations", "subtrees"]
    every = ["products", "sites", "releases", "locations", "subtrees"]
    assert client.post("/api/ops/refreshes", {"catalogs": every}, content_type="application/json",
                       **_bearer(TOKEN)).json()["catalogs"] == every


@pytest.mark.parametrize(("asked", "catalog_task_calls", "ran"), [
    (["subtrees"], [], ["subtrees"]),  # no catalog refresh: an empty list would read as "every catalog"
    (["locations", "subtrees"], [["locations"]], ["locations", "subtrees"]),
])
def test_the_worker_runs_the_named_catalogs_then_the_subtree_walk(asked, catalog_task_calls, ran, ops_cfg, client,
                                                                  db, monkeypatch):
    from eco_service import tasks

    monkeypatch.setattr(ops_api, "dispatch", lambda _id: None)
    calls: list[list[str]] = []

    def fake_catalogs(**kwargs):
        calls.append(kwargs["catalogs"])
        return [{"catalog": c, "ok": True} for c in kwargs["catalogs"]]

    monkeypatch.setattr("catalog.tasks.refresh_catalogs_task", fake_catalogs)
    monkeypatch.setattr("catalog.tasks.refresh_location_subtrees_task",
                        lambda trigger: {"catalog": "subtrees", "ok": False, "error": f"skipped ({trigger})"})
    rid = client.post("/api/ops/refreshes", {"catalogs": asked}, content_type="application/json",
                      **_bearer(TOKEN)).json()["id"]
    tasks.ops_refresh_task(rid)
    state = client.get(f"/api/ops/refreshes/{rid}", **_bearer(TOKEN)).json()
    assert calls == catalog_task_calls and [o["catalog"] for o in state["outcomes"]] == ran
    assert state["state"] == "failed" and state["error"] == "subtrees: skipped (ops)"


def _finished(client: Client, body: dict) -> dict:
    resp = client.post("/api/ops/refreshes", body, content_type="application/json", **_bearer(TOKEN))
    assert resp.status_code == 202, resp.content
    deadline = time.monotonic() + 120  # a bound against a hang, not a timing claim
    while (state := client.get(f"/api/ops/refreshes/{resp.json()['id']}", **_bearer(TOKEN)).json())["state"] in (
            "queued", "running"):
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    return state


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_a_queued_subtree_walk_runs_in_process_and_the_catalogs_report_its_progress(
        sim, active_config, client):
    from catalog.models import LocationNodeRow, LocationRow

    active_config(_cfg(ECO_MCP_ECO__BASE_URL=sim.base_url, ECO_MCP_ECO__GRAPHQL_URL=sim.graphql_url))
    assert _finished(client, {"catalogs": ["locations"]})["state"] == "succeeded"
    LocationRow.objects.filter(location_type="SITE").exclude(name__in=("BART", "HARV")).delete()  # a short walk
    state = _finished(client, {"catalogs": ["subtrees"]})
    assert state["state"] == "succeeded", state
    [outcome] = state["outcomes"]
    assert outcome["catalog"] == "subtrees" and outcome["rows"] == LocationNodeRow.objects.count() > 2
    fresh = {c["catalog"]: c for c in client.get("/api/ops/catalogs", **_bearer(TOKEN)).json()["catalogs"]}
    assert list(fresh) == ["products", "sites", "releases", "locations", "subtrees"]
    assert fresh["subtrees"]["rows"] == outcome["rows"] and fresh["subtrees"]["restBase"] == sim.base_url
    assert (fresh["subtrees"]["sitesDone"], fresh["subtrees"]["sitesTotal"], fresh["subtrees"]["refreshing"]) == (
        2, 2, False)
    assert fresh["locations"]["sitesDone"] is None  # the progress belongs to the walk alone
    log = client.get("/api/ops/refresh-log?catalog=subtrees", **_bearer(TOKEN)).json()
    assert [(e["catalog"], e["trigger"], e["ok"]) for e in log["items"]] == [("subtrees", "ops", True)]
