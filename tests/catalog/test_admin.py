"""The admin: freshness on the index page, browsable catalogs, and the refresh-now action."""

from __future__ import annotations

import pytest
from django.urls import reverse


@pytest.fixture
def staff(admin_client, eco_cfg):
    return admin_client


def test_admin_index_shows_each_catalog_age_and_state(staff, idx):
    page = staff.get(reverse("admin:index")).content.decode()
    assert 'id="catalog-freshness"' in page
    for name in ("products", "sites", "releases", "locations"):
        assert f">{name}</a>" in page
    assert "fresh" in page and "Upstream cache" in page and "warming" not in page


@pytest.mark.parametrize(
    ("model", "query"),
    [("productrow", "?q=temperature&product_status__exact=ACTIVE"), ("siterow", "?site_type__exact=CORE&q=river"),
     ("releaserow", "?q=2025"), ("catalogrefresh", "?ok__exact=1"), ("locationrow", "?location_type__exact=DOMAIN")],
)
def test_catalog_lists_filter_and_search(staff, idx, model, query):
    resp = staff.get(reverse(f"admin:catalog_{model}_changelist") + query)
    assert resp.status_code == 200
    assert resp.context["cl"].result_count > 0


def test_catalog_state_list_shows_age_and_staleness(staff, idx):
    resp = staff.get(reverse("admin:catalog_catalogstate_changelist"))
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "Age (s)" in page and "Stale" in page
    # Fresh catalogs get a neutral mark, never the red cross of a boolean "no"; the never-built
    # subtrees (stale) the admin's warning sign.
    assert page.count('<span title="fresh">–</span>') == 4 and "icon-no.svg" not in page
    assert page.count("icon-alert.svg") == 1


def test_the_admin_names_the_service_and_offers_no_link_to_a_missing_site(staff):
    page = staff.get(reverse("admin:index")).content.decode()
    assert "<title>NEON catalogs, refreshes and schedules | eco-mcp admin</title>" in page
    assert "eco-mcp administration" in page and "Django administration" not in page
    assert "View site" not in page
