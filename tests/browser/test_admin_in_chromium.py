"""The admin as a person sees it: under real uvicorn with DEBUG off, its static files are served
(the issue found black icons and bare HTML: every /static/ URL was 404), and in headless chromium
each page a staff member uses renders with the admin's styles. Screenshots of each page are saved
in a temporary folder whose path the test prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import STAFF_USER, Service

DJANGO_ADMIN_STATIC = Path(__import__("django").__file__).parent / "contrib" / "admin" / "static"
SYNC_ITERATOR_WARNING = "must consume synchronous iterators"

PAGES = [
    ("index", "/admin/", "#catalog-freshness"),
    ("refresh-log", "/admin/catalog/catalogrefresh/", "#result_list"),
    ("catalog-state", "/admin/catalog/catalogstate/", "#result_list"),
    ("products", "/admin/catalog/productrow/", "#result_list"),
    ("sites", "/admin/catalog/siterow/", "#result_list"),
]


@pytest.mark.parametrize(
    ("path", "content_type", "source"),
    [("/static/admin/css/base.css", "text/css", "admin/css/base.css"),
     ("/static/admin/js/theme.js", "text/javascript", "admin/js/theme.js"),
     ("/static/admin/img/icon-yes.svg", "image/svg+xml", "admin/img/icon-yes.svg")],
)
def test_admin_static_files_answer_under_uvicorn_with_debug_off(service: Service, path, content_type, source):
    resp = httpx.get(service.base + path, timeout=10)
    assert resp.status_code == 200, path
    assert resp.headers["content-type"].startswith(content_type)
    assert resp.content == (DJANGO_ADMIN_STATIC / source).read_bytes()
    # The router's Host/Origin guard and Django's security headers cover static files too.
    assert resp.headers["x-content-type-options"] == "nosniff" and "x-request-id" in resp.headers
    assert httpx.get(service.base + "/static/admin/css/no-such.css", timeout=10).status_code == 404
    assert SYNC_ITERATOR_WARNING not in service.log_text()


def test_static_files_obey_the_host_guard_like_every_route(service: Service):
    resp = httpx.get(service.base + "/static/admin/css/base.css", headers={"Host": "evil.example"}, timeout=10)
    assert resp.status_code in (403, 421) and "DJANGO Admin styles" not in resp.text


def _styled(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => {
            const header = document.getElementById('header');
            const style = header ? getComputedStyle(header) : null;
            const images = [...document.images].filter(img => img.src.includes('/static/'));
            return {
                headerBackground: style ? style.backgroundColor : null,
                bodyFont: getComputedStyle(document.body).fontFamily,
                sheets: document.styleSheets.length,
                brokenImages: images.filter(img => !img.complete || img.naturalWidth === 0).map(img => img.src),
                images: images.length,
            };
        }"""
    )


def test_a_staff_member_sees_every_admin_page_styled_in_chromium(service: Service, chromium, tmp_path_factory):
    shots = tmp_path_factory.mktemp("admin-screenshots")
    print(f"admin screenshots: {shots}")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    static_answers: list[tuple[str, int]] = []
    page.on("response", lambda r: static_answers.append((r.url, r.status)) if "/static/" in r.url else None)
    try:
        page.goto(service.base + "/admin/login/")
        page.fill("#id_username", STAFF_USER)
        page.fill("#id_password", service.password)
        page.click("input[type=submit]")
        page.wait_for_url(service.base + "/admin/")
        for name, path, landmark in PAGES:
            static_answers.clear()
            page.goto(service.base + path, wait_until="networkidle")
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            assert page.locator(landmark).count() == 1, f"{name}: {landmark} missing"
            seen = _styled(page)
            # Unstyled, the header is transparent and the body falls back to the browser's serif.
            assert seen["headerBackground"] not in (None, "rgba(0, 0, 0, 0)", "transparent"), (name, seen)
            assert "Times New Roman" not in seen["bodyFont"] and seen["sheets"] >= 2, (name, seen)
            assert seen["brokenImages"] == [], (name, seen)
            stylesheets = [(url, status) for url, status in static_answers if url.endswith(".css")]
            assert stylesheets and all(status in (200, 304) for _, status in stylesheets), (name, static_answers)
            assert all(status in (200, 304) for _, status in static_answers), (name, static_answers)
        # The refresh log's ok column is drawn with the admin's true/false icons.
        page.goto(service.base + "/admin/catalog/catalogrefresh/", wait_until="networkidle")
        assert _styled(page)["images"] > 0
        # The plural reads right where Django shows it: the index and the list's title.
        page.goto(service.base + "/admin/", wait_until="networkidle")
        assert page.get_by_role("link", name="Catalog refreshes").count() == 1
    finally:
        context.close()


def test_refresh_now_action_runs_from_the_catalog_state_page_in_chromium(service: Service, chromium,
                                                                          tmp_path_factory):
    shots = tmp_path_factory.mktemp("admin-action-screenshots")
    print(f"admin action screenshots: {shots}")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(service.base + "/admin/login/?next=/admin/catalog/catalogstate/")
        page.fill("#id_username", STAFF_USER)
        page.fill("#id_password", service.password)
        page.click("input[type=submit]")
        page.wait_for_url(service.base + "/admin/catalog/catalogstate/")
        row = page.locator("#result_list tbody tr", has_text="releases")
        row.locator("input.action-select").check()
        page.select_option("select[name=action]", "refresh_now")
        page.click("button[name=index]")
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(shots / "refresh-action.png"), full_page=True)
        message = page.locator("ul.messagelist li").first.text_content() or ""
        assert message.lower().startswith("releases:") and "rows from" in message, message
        # The message list is styled too (a success message has the admin's green tick background).
        assert page.locator("ul.messagelist li.success").evaluate("e => getComputedStyle(e).backgroundImage") != "none"
    finally:
        context.close()
