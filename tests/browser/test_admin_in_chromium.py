"""The admin as a person sees it: under real uvicorn with DEBUG off, its static files are served
(the issue found black icons and bare HTML: every /static/ URL was 404), and in headless chromium
each page a staff member uses renders with the admin's styles. Screenshots of each page are saved
in a temporary folder whose path the test prints."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import STAFF_USER, Service

DJANGO_ADMIN_STATIC = Path(__import__("django").__file__).parent / "contrib" / "admin" / "static"
SYNC_ITERATOR_WARNING = "must consume synchronous iterators"
# Kept after the run (pytest's own temporary folders are rotated away): look at them.
SCREENSHOTS = Path(tempfile.gettempdir()) / "eco-browser-screenshots"

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


LONG_ERROR = ("upstream_unavailable: /locations/HARV: upstream unreachable (ConnectError) after 3 attempts over "
              "30.0 s; the previous subtrees are kept and served until the next walk succeeds; " * 3).strip()


def _insert_failures(service: Service) -> None:
    """A failed refresh in the log and a failed subtree walk on its state, with a long error each
    (the admin must wrap it, not cut it off), written as the refresh service would."""
    db = sqlite3.connect(service.log.parent / "data" / "eco.sqlite3")
    try:
        now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
        db.execute("INSERT INTO catalog_catalogrefresh (catalog, source, \"trigger\", started_at, finished_at, ok, "
                   "rows, upstream_requests, error) VALUES ('subtrees', 'rest+gql', 'admin', ?, ?, 0, 0, 3, ?)",
                   (now, now, LONG_ERROR))
        db.execute("INSERT INTO catalog_catalogstate (catalog, version, source, row_count, last_attempt_at, last_error, "
                   "rest_base, graphql_url, progress_done, progress_total) VALUES ('subtrees', 0, '', 0, ?, ?, '', '', "
                   "0, 0) ON CONFLICT (catalog) DO UPDATE SET last_error = excluded.last_error", (now, LONG_ERROR))
        db.commit()
    finally:
        db.close()


def _login(page: Any, service: Service, then: str) -> None:
    page.goto(f"{service.base}/admin/login/?next={then}")
    page.fill("#id_username", STAFF_USER)
    page.fill("#id_password", service.password)
    page.click("input[type=submit]")
    page.wait_for_url(service.base + then)


FRESHNESS_LAYOUT = """() => {
    const panel = document.getElementById('catalog-freshness');
    const names = [...panel.querySelectorAll('tbody th a')];
    const error = panel.querySelector('.eco-error-text');
    return {
        names: names.map(a => [a.textContent, a.getClientRects().length]),
        panelRight: panel.getBoundingClientRect().right,
        overflowing: panel.scrollWidth > panel.clientWidth,
        errorRight: error ? error.getBoundingClientRect().right : null,
        errorText: error ? error.textContent : null,
        width: window.innerWidth,
        header: document.getElementById('site-name').textContent.trim(),
        title: document.title,
        viewSite: [...document.querySelectorAll('#user-tools a')].some(a => /view site/i.test(a.textContent)),
    };
}"""

ERROR_CELL = """() => {
    const row = [...document.querySelectorAll('#result_list tbody tr')].find(r => r.textContent.includes('upstream_unavailable'));
    const cell = row.querySelector('td.field-error_text div');
    return {cut: cell.scrollWidth > cell.clientWidth, text: cell.textContent};
}"""
# A list's table wider than its box is scrolled sideways, its last columns (the error) out of view.
LIST_FITS = """() => {
    const box = document.querySelector('#changelist .results');
    return {scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
            right: box.getBoundingClientRect().right, width: window.innerWidth};
}"""


@pytest.mark.parametrize("width", [1280, 1400, 1920])
def test_the_freshness_panel_and_the_refresh_log_read_whole_in_chromium(service: Service, chromium, width):
    if width == 1280:
        _insert_failures(service)
    shots = SCREENSHOTS / "layout"
    shots.mkdir(parents=True, exist_ok=True)
    print(f"admin layout screenshots: {shots}")
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        _login(page, service, "/admin/")
        page.goto(service.base + "/admin/", wait_until="networkidle")
        page.screenshot(path=str(shots / f"index-{width}.png"), full_page=True)
        seen = page.evaluate(FRESHNESS_LAYOUT)
        # Each catalog name on one line (it was one letter a line), the panel within the page.
        assert seen["names"] == [[n, 1] for n in ("products", "sites", "releases", "locations", "subtrees")], seen
        assert not seen["overflowing"] and seen["panelRight"] <= seen["width"], seen
        # The subtree walk's error is there to read, inside the page, not only in a tooltip.
        assert seen["errorText"] == LONG_ERROR and seen["errorRight"] <= seen["width"], seen
        assert seen["header"] == "eco-mcp administration" and seen["title"].endswith("| eco-mcp admin")
        assert not seen["viewSite"]

        page.goto(service.base + "/admin/catalog/catalogrefresh/?ok__exact=0", wait_until="networkidle")
        page.screenshot(path=str(shots / f"refresh-log-{width}.png"), full_page=True)
        cell = page.evaluate(ERROR_CELL)
        assert cell["text"] == LONG_ERROR and not cell["cut"], cell
        fits = page.evaluate(LIST_FITS)
        assert fits["scrollWidth"] <= fits["clientWidth"] and fits["right"] <= fits["width"], fits

        page.goto(service.base + "/admin/catalog/catalogstate/", wait_until="networkidle")
        page.screenshot(path=str(shots / f"catalog-state-{width}.png"), full_page=True)
        stale = {row: page.locator("#result_list tbody tr", has_text=row).locator("td.field-stale").inner_html()
                 for row in ("products", "subtrees")}
        assert stale["products"] == '<span title="fresh">–</span>' and "icon-alert.svg" in stale["subtrees"], stale
        # Every column, the wrapped error last, within the window (nothing behind a sideways scroll).
        fits = page.evaluate(LIST_FITS)
        assert fits["scrollWidth"] <= fits["clientWidth"] and fits["right"] <= fits["width"], fits
    finally:
        context.close()


def test_the_ops_api_docs_load_in_chromium_without_an_external_request(service: Service, chromium):
    shots = SCREENSHOTS / "ops-docs"
    shots.mkdir(parents=True, exist_ok=True)
    print(f"ops docs screenshot: {shots}")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    asked: list[str] = []

    def route(r: Any) -> None:
        asked.append(r.request.url)
        # Anything outside the service is refused here, so a page that needs it shows broken.
        r.continue_() if r.request.url.startswith(service.base + "/") else r.abort()

    page.route("**/*", route)
    try:
        page.goto(service.base + "/api/ops/docs", wait_until="networkidle")
        page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
        page.screenshot(path=str(shots / "docs.png"), full_page=True)
        title = page.locator(".swagger-ui .info .title").inner_text()
        operations = page.locator(".swagger-ui .opblock-summary-path").all_inner_texts()
    finally:
        context.close()
    assert [u for u in asked if not u.startswith(service.base + "/")] == []
    assert any(u.endswith("/static/ninja/swagger-ui-bundle.js") for u in asked)
    assert any(u.endswith("/api/ops/openapi.json") for u in asked)
    assert title.startswith("eco-mcp ops API")
    assert "/api/ops/catalogs" in operations and "/api/ops/upstream/cache" in operations
