"""DNS-rebinding protection covers every HTTP route, Django's admin included, and Django's own
ALLOWED_HOSTS / CSRF_TRUSTED_ORIGINS follow the same allow-list as /mcp."""

from __future__ import annotations

import re

import httpx
import pytest
from django.core.exceptions import DisallowedHost
from django.test import RequestFactory

from tests.gateway.conftest import make_cfg, run_http
from tests.gateway.wire import modern_request

pytestmark = pytest.mark.django_db(transaction=True)

ROUTES = ["/mcp", "/healthz", "/readyz", "/admin/", "/admin/login/"]


@pytest.fixture
def full_app(fake_catalog, active_config, settings):
    """The router in front of the real Django app, as uvicorn serves it, with Django's host and
    origin lists as the settings module makes them (pytest-django replaces them with a copy)."""
    from django.core.asgi import get_asgi_application

    import eco_service.settings as eco_settings
    from mcp_gateway.http_app import build_app

    settings.ALLOWED_HOSTS = eco_settings.ALLOWED_HOSTS
    settings.CSRF_TRUSTED_ORIGINS = eco_settings.CSRF_TRUSTED_ORIGINS

    def start(cfg=None):
        cfg = cfg or make_cfg(cache__prewarm=False)
        active_config(cfg)
        return run_http(build_app(django_app=get_asgi_application(), cfg=cfg))

    return start


def _request(base: str, path: str, headers: dict[str, str]) -> httpx.Response:
    if path == "/mcp":
        body, mcp_headers = modern_request("tools/list")
        return httpx.post(base + path, json=body, headers={**mcp_headers, **headers}, follow_redirects=False)
    return httpx.get(base + path, headers=headers, follow_redirects=False)


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_foreign_host_a_smuggled_host_and_a_foreign_origin(full_app, path):
    with full_app() as srv:
        foreign = _request(srv.base, path, {"Host": f"evil.example:{srv.port}"})
        smuggled = _request(srv.base, path, {"Host": f"127.0.0.1:{srv.port}, evil.example"})
        origin = _request(srv.base, path, {"Origin": f"http://evil.example:{srv.port}"})
        allowed = _request(srv.base, path, {"Origin": f"http://127.0.0.1:{srv.port}"})
    assert foreign.status_code == 421 and "evil.example" in foreign.json()["error"]
    assert smuggled.status_code == 421
    assert origin.status_code == 403 and "Origin" in origin.json()["error"]
    assert "x-request-id" in foreign.headers and "x-request-id" in origin.headers
    assert allowed.status_code in (200, 302, 503), allowed.text[:300]


def test_the_public_host_is_served_on_every_route_and_loopback_names_stay_allowed(full_app):
    cfg = make_cfg(cache__prewarm=False, server__bind_address="0.0.0.0", server__public_base_url="https://eco.example.org")
    with full_app(cfg) as srv:
        public = {p: _request(srv.base, p, {"Host": "eco.example.org", "Origin": "https://eco.example.org"}) for p in ROUTES}
        probe = _request(srv.base, "/healthz", {})
        other = _request(srv.base, "/admin/login/", {"Host": "lan-name.example:8080"})
    assert {p: r.status_code for p, r in public.items()} == {
        "/mcp": 200, "/healthz": 200, "/readyz": 503, "/admin/": 302, "/admin/login/": 200}
    assert probe.status_code == 200
    assert other.status_code == 421


def test_admin_login_post_with_a_foreign_origin_is_refused_before_django(full_app):
    with full_app() as srv, httpx.Client(base_url=srv.base) as browser:
        page = browser.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        form = {"csrfmiddlewaretoken": token, "username": "admin", "password": "guess", "next": "/admin/"}
        rebound = browser.post("/admin/login/", data=form, headers={"Origin": f"http://evil.example:{srv.port}"})
        rebound_host = browser.post("/admin/login/", data=form, headers={
            "Host": f"evil.example:{srv.port}", "Origin": f"http://evil.example:{srv.port}"})
        same_origin = browser.post("/admin/login/", data=form, headers={"Origin": f"http://127.0.0.1:{srv.port}"})
    assert page.status_code == 200
    assert rebound.status_code == 403 and rebound.headers["content-type"] == "application/json"
    assert rebound_host.status_code == 421
    # The same form from the page's own origin reaches Django, which only rejects the password.
    assert same_origin.status_code == 200 and "Please enter the correct username" in same_origin.text


def test_django_allowed_hosts_follow_the_active_configuration(active_config, settings):
    import eco_service.settings as eco_settings

    settings.ALLOWED_HOSTS = eco_settings.ALLOWED_HOSTS
    factory = RequestFactory()
    active_config(make_cfg(server__public_base_url="https://eco.example.org"))
    assert factory.get("/admin/", HTTP_HOST="eco.example.org").get_host() == "eco.example.org"
    assert factory.get("/admin/", HTTP_HOST="127.0.0.1:8080").get_host() == "127.0.0.1:8080"
    with pytest.raises(DisallowedHost):
        factory.get("/admin/", HTTP_HOST="evil.example").get_host()
    with pytest.raises(DisallowedHost):
        factory.get("/admin/", HTTP_HOST="127.0.0.1:8080, evil.example").get_host()
    # Protection off (wildcard bind, no lists), as for /mcp: any Host.
    active_config(make_cfg(server__bind_address="0.0.0.0"))
    assert factory.get("/admin/", HTTP_HOST="anything.example").get_host() == "anything.example"


def test_django_csrf_trusts_the_public_origin_and_not_a_foreign_one(active_config, settings):
    from django.middleware.csrf import CsrfViewMiddleware

    import eco_service.settings as eco_settings

    settings.ALLOWED_HOSTS = eco_settings.ALLOWED_HOSTS
    settings.CSRF_TRUSTED_ORIGINS = eco_settings.CSRF_TRUSTED_ORIGINS
    active_config(make_cfg(server__public_base_url="https://eco.example.org"))
    middleware = CsrfViewMiddleware(lambda request: None)
    factory = RequestFactory()
    # Behind a TLS-terminating proxy Django sees http, so the https origin must be trusted by name.
    public = factory.post("/admin/login/", HTTP_HOST="eco.example.org", HTTP_ORIGIN="https://eco.example.org")
    foreign = factory.post("/admin/login/", HTTP_HOST="eco.example.org", HTTP_ORIGIN="https://evil.example")
    assert middleware._origin_verified(public) is True
    assert middleware._origin_verified(foreign) is False
    assert list(eco_settings.CSRF_TRUSTED_ORIGINS) == ["https://eco.example.org"]
