"""`uvicorn eco_service.asgi:application` (the compose entry) and the real catalog behind /readyz."""

from __future__ import annotations

import importlib

import httpx
import pytest

from eco_core import config as eco_config
from tests.gateway.conftest import make_cfg, run_http
from tests.gateway.wire import modern_request, reply


@pytest.mark.django_db(transaction=True)
def test_the_asgi_module_serves_mcp_health_and_django_in_http_mode(active_config, settings):
    # HTTP start-up refuses a known secret key (eco.E004); this one is private to the test.
    settings.SECRET_KEY = "asgi-entry-test-" + "k3y-" * 12
    active_config(make_cfg(server__transport="stdio", cache__prewarm=False))
    asgi = importlib.import_module("eco_service.asgi")
    app = asgi.build_app(django_app=asgi.get_asgi_application())
    # No --transport flag reaches uvicorn: the process configuration is switched to HTTP.
    assert eco_config.get_config().is_http
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with run_http(app) as srv:
        health = httpx.get(f"{srv.base}/healthz").json()
        ping = reply(httpx.post(srv.url, json=body, headers=headers))
        admin = httpx.get(f"{srv.base}/admin/login/")
    assert health["transport"] == "http"
    assert ping["result"]["structuredContent"]["transport"] == "http"
    assert ping["result"]["structuredContent"]["downloadsEnabled"] is False
    assert admin.status_code == 200 and "x-request-id" in admin.headers


@pytest.mark.django_db(transaction=True)
def test_readyz_with_the_real_catalog_is_warming_while_the_catalogs_are_empty():
    from mcp_gateway.http_app import build_app

    with run_http(build_app(cfg=make_cfg(cache__prewarm=False))) as srv:
        resp = httpx.get(f"{srv.base}/readyz")
    assert resp.status_code == 503
    assert resp.json() == {
        "status": "warming", "startupBuild": {"state": "off"},
        "reason": "the products catalog has not been built yet (no attempt has ended); the sites catalog has not "
                  "been built yet (no attempt has ended); nothing builds them at start (cache.prewarm is off): the "
                  "first tool call that needs them does",
        "waitingFor": {c: {"lastAttemptAt": None, "lastError": None, "upstreamMismatch": None}
                       for c in ("products", "sites")}}
