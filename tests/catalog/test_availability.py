"""Availability selectors checked against the simulator's own REST answer for the product."""

from __future__ import annotations

import httpx
import pytest

from catalog.availability import cell_availability, product_availability, site_availability
from catalog.months import expand
from eco_core.errors import EcoError

CODE = "DP1.00001.001"


@pytest.fixture(scope="module")
def upstream(sim, catalog_module):
    body = httpx.get(f"{sim.base_url}/products/{CODE}", timeout=60).json()["data"]
    return {s["siteCode"]: {r["release"]: sorted(r["availableMonths"]) for r in s["availableReleases"]}
            for s in body["siteCodes"]}


def test_product_mode_has_one_row_per_site_with_the_upstream_months_by_release(idx, upstream):
    r = product_availability(CODE, fmt="months", index=idx)
    assert r.mode == "product" and r.resolved["product"]["productCode"] == CODE
    assert {row.site_code for row in r.rows} == {s for s, rels in upstream.items() if any(rels.values())}
    for row in r.rows:
        assert row.by_release == {k: v for k, v in upstream[row.site_code].items() if v}


def test_ranges_are_the_compact_form_of_the_same_months(idx, upstream):
    row = product_availability(CODE, site_codes=["ABBY"], index=idx).rows[0]
    assert {k: expand(v) for k, v in row.by_release.items()} == {k: v for k, v in upstream["ABBY"].items() if v}
    assert all("/" in r for v in row.by_release.values() for r in v)


def test_summary_totals_site_months_per_release(idx, upstream):
    r = product_availability(CODE, fmt="counts", index=idx)
    expected: dict[str, int] = {}
    for rels in upstream.values():
        for tag, ms in rels.items():
            if ms:
                expected[tag] = expected.get(tag, 0) + len(ms)
    assert r.summary == dict(sorted(expected.items()))


def test_window_and_provisional_options_cut_the_lists(idx):
    only = product_availability(CODE, provisional="only", index=idx)
    assert only.rows and all(set(row.by_release) == {"PROVISIONAL"} for row in only.rows)
    released = product_availability(CODE, release="RELEASE-2025", provisional="exclude",
                                     start_month="2019-01", end_month="2019-06", fmt="months", index=idx)
    assert released.window == {"start": "2019-01", "end": "2019-06"}
    for row in released.rows:
        assert set(row.by_release) == {"RELEASE-2025"}
        assert all("2019-01" <= m <= "2019-06" for m in row.by_release["RELEASE-2025"])


def test_site_mode_and_cell_mode(idx, upstream):
    site = site_availability("ABBY", product_codes=[CODE, "DP1.10003"], index=idx)
    assert site.mode == "site" and {row.product_code for row in site.rows} <= {CODE, "DP1.10003.001"}
    assert CODE in {row.product_code for row in site.rows}
    cell = cell_availability(CODE, "abby", index=idx)
    assert cell.mode == "cell" and cell.format == "months" and len(cell.rows) == 1
    assert cell.rows[0].by_release == {k: v for k, v in upstream["ABBY"].items() if v}


def test_provisional_only_with_a_release_is_invalid_argument(idx):
    with pytest.raises(EcoError) as exc:
        product_availability(CODE, release="RELEASE-2025", provisional="only", index=idx)
    assert exc.value.code == "invalid_argument" and exc.value.message.startswith("provisional")


def test_unknown_site_in_site_codes_is_not_found_naming_the_field(idx):
    with pytest.raises(EcoError) as exc:
        product_availability(CODE, site_codes=["ZZZZ"], index=idx)
    assert exc.value.code == "not_found" and exc.value.message.startswith("site_codes")
