"""The availability family's reads (catalog.availability.get_availability) checked against the
simulator's own REST answer for the product."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from catalog import availability as av
from catalog.availability import Window, get_availability
from catalog.months import expand
from eco_core import config as eco_config
from eco_core.errors import EcoError
from upstream.client import close_clients, get_client

CODE = "DP1.00001.001"


class NoUpstream:
    """Stands in for the upstream client where a read must be served by the catalog alone."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the read asked the upstream ({name}) although the catalog holds the answer")


@pytest.fixture(scope="module")
def upstream(sim, catalog_module):
    body = httpx.get(f"{sim.base_url}/products/{CODE}", timeout=60).json()["data"]
    return {s["siteCode"]: {r["release"]: sorted(r["availableMonths"]) for r in s["availableReleases"]}
            for s in body["siteCodes"]}


@pytest.fixture
async def client(sim):
    """The real upstream client pointed at the simulator (for reads of a pinned release)."""
    cfg = eco_config.load_config(env={"ECO_MCP_ECO__BASE_URL": sim.base_url,
                                      "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url}, warn=False)
    with eco_config.use_config(cfg):
        yield get_client()
        await close_clients()


async def read(idx, *, client: Any = None, **kwargs: Any):
    kwargs.setdefault("product", None)
    kwargs.setdefault("site", None)
    return await get_availability(idx=idx, client=client or NoUpstream(), **kwargs)


async def test_product_mode_has_one_row_per_site_with_the_upstream_months_by_release(idx, upstream):
    a = await read(idx, product=CODE, fmt="months")
    r = a.record
    assert r.mode == "product" and a.resolved["product"]["productCode"] == CODE and not a.from_upstream
    assert {row.site_code for row in r.rows} == {s for s, rels in upstream.items() if any(rels.values())}
    for row in r.rows:
        assert row.by_release == {k: v for k, v in upstream[row.site_code].items() if v}


async def test_ranges_are_the_compact_form_of_the_same_months(idx, upstream):
    row = (await read(idx, product=CODE, site_codes=["ABBY"])).record.rows[0]
    assert {k: expand(v) for k, v in row.by_release.items()} == {k: v for k, v in upstream["ABBY"].items() if v}
    assert all("/" in r for v in row.by_release.values() for r in v)


async def test_summary_totals_site_months_per_release(idx, upstream):
    r = (await read(idx, product=CODE, fmt="counts")).record
    expected: dict[str, int] = {}
    for rels in upstream.values():
        for tag, ms in rels.items():
            if ms:
                expected[tag] = expected.get(tag, 0) + len(ms)
    assert r.summary.by_release == dict(sorted(expected.items()))


async def test_window_and_provisional_options_cut_the_lists(idx, client):
    only = (await read(idx, product=CODE, provisional="only")).record
    assert only.rows and all(set(row.by_release) == {"PROVISIONAL"} for row in only.rows)
    released = await read(idx, client=client, product=CODE, release="RELEASE-2025", provisional="exclude",
                          start_month="2019-01", end_month="2019-06", fmt="months")
    assert released.from_upstream and released.record.release == "RELEASE-2025"
    assert released.record.window == Window(start_month="2019-01", end_month="2019-06")
    assert released.record.rows
    for row in released.record.rows:
        assert set(row.by_release) == {"RELEASE-2025"}
        assert all("2019-01" <= m <= "2019-06" for months in row.by_release.values() for m in months)


async def test_site_mode_and_cell_mode(idx, upstream):
    site = (await read(idx, site="ABBY", product_codes=[CODE, "DP1.10003"])).record
    assert site.mode == "site" and {row.product_code for row in site.rows} <= {CODE, "DP1.10003.001"}
    assert CODE in {row.product_code for row in site.rows}
    cell = (await read(idx, product=CODE, site="abby")).record
    assert cell.mode == "cell" and cell.format == "months" and len(cell.rows) == 1
    assert cell.rows[0].by_release == {k: v for k, v in upstream["ABBY"].items() if v}


async def test_provisional_only_with_a_release_is_invalid_argument(idx):
    with pytest.raises(EcoError) as exc:
        await read(idx, product=CODE, release="RELEASE-2025", provisional="only")
    assert exc.value.code == "invalid_argument" and exc.value.message.startswith("provisional")


async def test_unknown_site_in_site_codes_is_not_found_naming_the_field(idx):
    with pytest.raises(EcoError) as exc:
        await read(idx, product=CODE, site_codes=["ZZZZ"])
    assert exc.value.code == "not_found" and exc.value.message.startswith("site_codes")


def test_a_whole_cell_read_off_the_index_answers_as_shaping_its_intervals(idx):
    # The default call reads a cell's kept texts, count and first and last month; any other call
    # shapes its intervals. Both must give the same row for every cell the catalog holds.
    cells = [c for p in idx.products for c in p.cells.values()]
    assert len(cells) > 1000
    for c in cells:
        for fmt in ("ranges", "counts"):
            kept = av.shape_cell(c, provisional="include", start=None, end=None, fmt=fmt)
            shaped = av.shape_intervals(c.by_release, provisional="include", start=None, end=None, fmt=fmt,
                                        overall=False)
            assert kept == shaped, (c.product_code, c.site_code, fmt)


async def test_the_default_call_takes_kept_rows_that_answer_as_fresh_ones_and_stay_bounded(idx, monkeypatch):
    first = (await read(idx, product=CODE)).record
    again = (await read(idx, product=CODE)).record
    assert again == first and again.rows[0] is first.rows[0]  # kept, not made again
    # Any other call shapes its rows afresh: the same months, another object.
    shaped = (await read(idx, product=CODE, provisional="exclude")).record
    released = {r.site_code: r for r in first.rows if set(r.by_release) - {"PROVISIONAL"}}
    assert [r.site_code for r in shaped.rows] == sorted(released)
    for row in shaped.rows:
        assert row is not released[row.site_code]
        assert row.by_release == {k: v for k, v in released[row.site_code].by_release.items() if k != "PROVISIONAL"}
    monkeypatch.setattr(av, "_ROWS_HELD", 5)
    av._rows.clear()
    for site in [s.code for s in idx.sites][:40]:
        await read(idx, site=site, fmt="counts")
        assert len(av._rows) <= 5  # cleared when full
