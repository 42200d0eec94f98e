"""/readyz without a database, the router's security headers, and eco_ping and /readyz agreeing
on tokenConfigured."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client

from mcp_gateway import health
from mcp_gateway.server import build_server
from tests.gateway.conftest import REPO, make_cfg
from tests.gateway.wire import modern_request, reply

SECURITY = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer"}
TOKEN = "tok-readyz-" + "x" * 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_readyz_answers_503_json_with_a_request_id_when_the_database_is_unreachable(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "DJANGO_", "REDIS_URL"))}
    port = _free_port()
    env.update({
        # Port 9 on loopback: nothing listens, the connection is refused at once.
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:9/nowhere",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ECO_MCP_CACHE__PREWARM": "false",
        "ECO_MCP_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
    })
    uvicorn = str(Path(sys.executable).parent / "uvicorn")
    with (tmp_path / "web.log").open("w+") as log:
        proc = subprocess.Popen([uvicorn, "eco_service.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
                                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    resp = httpx.get(f"http://127.0.0.1:{port}/readyz", headers={"X-Request-Id": "ready-1"}, timeout=10)
                    break
                except httpx.TransportError:
                    assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                    time.sleep(0.2)
            health_resp = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        log.seek(0)
        output = log.read()
    assert resp.status_code == 503, output
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["x-request-id"] == "ready-1"
    assert resp.json() == {"status": "unavailable", "reason": "database unavailable"}
    assert health_resp.status_code == 200
    assert "nowhere" not in resp.text and "Traceback" not in output


def test_readyz_says_which_catalog_failed_why_and_when_the_start_up_build_tries_again(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ECO_MCP_", "ECO_TOKEN", "DJANGO_", "REDIS_URL", "DATABASE_URL", "CELERY_"))}
    port = _free_port()
    env.update({
        # Port 9 on loopback: nothing listens, every upstream request is refused at once.
        "ECO_MCP_ECO__BASE_URL": "http://127.0.0.1:9/api/v0",
        "ECO_MCP_ECO__GRAPHQL_URL": "http://127.0.0.1:9/graphql",
        "ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS": "1",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "ECO_MCP_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
    })
    uvicorn = str(Path(sys.executable).parent / "uvicorn")
    with (tmp_path / "web.log").open("w+") as log:
        proc = subprocess.Popen([uvicorn, "eco_service.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
                                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 90
            body: dict = {}
            while body.get("startupBuild", {}).get("state") != "waiting":
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.3)
                try:
                    resp = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
                except httpx.TransportError:
                    continue
                assert resp.status_code == 503
                body = resp.json()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert body["status"] == "warming"
    products = body["waitingFor"]["products"]
    assert products["lastError"].startswith("upstream_unavailable") and products["lastAttemptAt"].endswith("Z")
    assert set(body["waitingFor"]) == {"products", "sites"}
    build = body["startupBuild"]
    assert build["attempts"] == 1 and 0 <= build["retryInSeconds"] <= 30 and build["retryAt"].endswith("Z")
    assert body["reason"].startswith("the products catalog could not be built from http://127.0.0.1:9/api/v0 "
                                     f"(last attempt {products['lastAttemptAt']}): {products['lastError']}; ")
    assert f"tries again in {build['retryInSeconds']} s" in body["reason"]


def test_mcp_healthz_readyz_and_refusals_carry_the_security_headers_once(http_server, fake_catalog):
    body, headers = modern_request("tools/list")
    with http_server() as srv:
        answers = {
            "mcp": httpx.post(srv.url, json=body, headers=headers),
            "mcp-405": httpx.get(srv.url),
            "healthz": httpx.get(f"{srv.base}/healthz"),
            "readyz": httpx.get(f"{srv.base}/readyz"),
            "refused": httpx.get(f"{srv.base}/healthz", headers={"Host": "evil.example"}),
        }
    assert answers["mcp"].status_code == 200 and answers["refused"].status_code == 421
    for name, resp in answers.items():
        for header, value in SECURITY.items():
            assert resp.headers.get_list(header) == [value], (name, header)


def test_django_routes_keep_their_own_headers_without_duplicates(http_server):
    async def django_app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/html"), (b"x-frame-options", b"SAMEORIGIN")]})
        await send({"type": "http.response.body", "body": b"<p>admin</p>"})

    with http_server(django_app=django_app) as srv:
        resp = httpx.get(f"{srv.base}/admin/login/")
    assert resp.headers.get_list("x-frame-options") == ["SAMEORIGIN"]


@pytest.fixture
def real_readiness(fake_catalog, monkeypatch):
    """The catalog's own readiness() (which reports tokenConfigured), over warm catalogs."""
    from catalog import status as catalog_status_mod
    from catalog.models import CATALOGS
    from mcp_gateway import ports

    warm = {"ready": True, "degraded": False, **{c: {"count": 10, "ageSeconds": 5, "restBase": None, "graphqlUrl": None,
                                                          "upstreamMismatch": None} for c in CATALOGS}}
    monkeypatch.setattr(catalog_status_mod, "catalog_status", lambda cfg=None: warm)
    monkeypatch.setattr(ports, "readiness", catalog_status_mod.readiness)
    fake_catalog["ready"] = True


async def _ping_over_stdio(cfg):
    async with Client(build_server(cfg), mode="2026-07-28") as client:
        return (await client.call_tool("eco_ping", {})).structured_content


@pytest.mark.django_db(transaction=True)
async def test_eco_ping_and_readyz_agree_on_token_configured_for_a_stdio_config_token(real_readiness, active_config):
    cfg = make_cfg(env={"ECO_TOKEN": TOKEN}, server__transport="stdio")
    active_config(cfg)
    ping = await _ping_over_stdio(cfg)
    status, ready = await health.readyz(cfg)
    assert status == 200
    assert ping["tokenConfigured"] is ready["tokenConfigured"] is True


@pytest.mark.parametrize(("share", "expected"), [(False, False), (True, True)], ids=["not-lent", "lent"])
def test_eco_ping_and_readyz_agree_on_token_configured_over_http(http_server, real_readiness, active_config, share, expected):
    cfg = make_cfg(env={"ECO_TOKEN": TOKEN}, server__share_config_token_over_http=share)
    active_config(cfg)
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with http_server(cfg) as srv:
        ping = reply(httpx.post(srv.url, json=body, headers=headers))["result"]["structuredContent"]
        ready = httpx.get(f"{srv.base}/readyz")
    assert ready.status_code == 200
    # The operator's token only counts for an anonymous HTTP caller when it is lent to them.
    assert ping["tokenConfigured"] is ready.json()["tokenConfigured"] is expected
    assert TOKEN not in ready.text
