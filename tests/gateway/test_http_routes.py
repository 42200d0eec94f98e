"""The HTTP transport's routes and guards, over a real socket."""

from __future__ import annotations

import time

import httpx

from tests.gateway.conftest import make_cfg
from tests.gateway.wire import modern_request, reply, sse_messages


def test_healthz_reports_status_version_protocol_and_transport(http_server):
    with http_server() as srv:
        resp = httpx.get(f"{srv.base}/healthz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "version": "0.1.0", "protocolVersion": "2026-07-28", "transport": "http"}


def test_readyz_says_warming_with_503_until_the_background_prewarm_finishes(http_server, fake_catalog, monkeypatch):
    from mcp_gateway import ports

    release = {"go": False}

    async def slow_prewarm(cfg):
        import anyio

        while not release["go"]:
            await anyio.sleep(0.01)
        fake_catalog["ready"] = True

    monkeypatch.setattr(ports, "prewarm", slow_prewarm)
    with http_server() as srv:
        first = httpx.get(f"{srv.base}/readyz")
        release["go"] = True
        deadline = time.monotonic() + 10
        later = httpx.get(f"{srv.base}/readyz")
        while later.status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.02)
            later = httpx.get(f"{srv.base}/readyz")
    assert first.status_code == 503
    assert first.json() == {"status": "warming", "reason": "start-up build attempt 1 is under way",
                            "startupBuild": {"state": "running", "attempt": 1}}
    assert later.status_code == 200
    assert {"degraded", "tokenConfigured"} <= set(later.json())


def test_no_prewarm_runs_when_prewarm_is_off(http_server, fake_catalog):
    with http_server(make_cfg(cache__prewarm=False)) as srv:
        resp = httpx.get(f"{srv.base}/readyz")
    assert fake_catalog["prewarmed"] == 0
    assert resp.status_code == 503 and resp.json()["startupBuild"] == {"state": "off"}
    assert "cache.prewarm is off" in resp.json()["reason"]


def test_get_and_delete_on_mcp_answer_405_without_opening_a_stream(http_server):
    with http_server() as srv:
        got = httpx.get(srv.url, headers={"Accept": "text/event-stream"}, timeout=5)
        got_legacy = httpx.get(srv.url, headers={"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}, timeout=5)
        deleted = httpx.delete(f"{srv.url}/".rstrip("/") + "/", timeout=5)
    assert got.status_code == got_legacy.status_code == deleted.status_code == 405
    assert got.headers["allow"] == "POST"


def test_wrong_host_gets_421_on_a_loopback_bind(http_server):
    body, headers = modern_request("tools/list")
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers={**headers, "Host": "evil.example:80"})
        ok = httpx.post(srv.url, json=body, headers=headers)
    assert resp.status_code == 421
    assert ok.status_code == 200


def test_disallowed_origin_gets_403_and_public_base_url_joins_the_lists(http_server):
    body, headers = modern_request("tools/list")
    cfg = make_cfg(server__public_base_url="https://eco.example.org")
    with http_server(cfg) as srv:
        evil = httpx.post(srv.url, json=body, headers={**headers, "Origin": "https://evil.example"})
        public = httpx.post(srv.url, json=body, headers={**headers, "Host": "eco.example.org", "Origin": "https://eco.example.org"})
    assert evil.status_code == 403
    assert public.status_code == 200


def test_host_checks_are_off_for_a_wildcard_bind_without_allow_lists(http_server):
    body, headers = modern_request("tools/list")
    with http_server(make_cfg(server__bind_address="0.0.0.0")) as srv:
        resp = httpx.post(srv.url, json=body, headers={**headers, "Host": "anything.example"})
    assert resp.status_code == 200


def test_a_body_over_one_mebibyte_gets_413(http_server):
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {"pad": "x" * (1024 * 1024)}})
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    assert resp.status_code == 413


def test_well_formed_request_id_is_echoed_and_a_bad_one_replaced(http_server):
    with http_server() as srv:
        mine = httpx.get(f"{srv.base}/healthz", headers={"X-Request-Id": "abc-123.x"})
        bad = httpx.get(f"{srv.base}/healthz", headers={"X-Request-Id": "no spaces <allowed>"})
        none = httpx.post(srv.url, json={}, headers={"Content-Type": "application/json"})
    assert mine.headers["x-request-id"] == "abc-123.x"
    assert bad.headers["x-request-id"] not in ("", "no spaces <allowed>")
    assert len(none.headers["x-request-id"]) == 32


def test_mcp_with_trailing_slash_is_served_without_redirect(http_server):
    body, headers = modern_request("tools/list")
    with http_server() as srv:
        resp = httpx.post(f"{srv.url}/", json=body, headers=headers, follow_redirects=False)
    assert resp.status_code == 200
    assert "eco_ping" in [t["name"] for t in reply(resp)["result"]["tools"]]


def test_a_reply_is_one_sse_frame_and_no_session_id_is_issued(http_server):
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with http_server() as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert len(sse_messages(resp.text)) == 1
    assert "mcp-session-id" not in resp.headers


def test_json_response_setting_answers_application_json(http_server):
    body, headers = modern_request("tools/list")
    with http_server(make_cfg(server__json_response=True)) as srv:
        resp = httpx.post(srv.url, json=body, headers=headers)
    assert resp.headers["content-type"].startswith("application/json")
    assert "eco_ping" in [t["name"] for t in resp.json()["result"]["tools"]]


def test_other_paths_go_to_django(http_server):
    seen = []

    async def django_app(scope, receive, send):
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"django"})

    with http_server(django_app=django_app) as srv:
        resp = httpx.get(f"{srv.base}/admin/login/")
    assert resp.text == "django" and seen == ["/admin/login/"]
    assert "x-request-id" in resp.headers
