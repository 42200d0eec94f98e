"""The availability family's read (families.availability) checked against the simulator's own
REST answer for the product, and the shaping it shares with other families (catalog.availability)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from catalog.availability import Window
from catalog.months import expand
from eco_core import config as eco_config
from eco_core.errors import EcoError
from eco_core.memo import memos
from families import availability
from families.call import CallContext
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


async def read(idx, *, client: Any = None, **kwargs: Any) -> availability.AvailabilityOutput:
    """The family's answer read off `idx` (the module's own index), asking `client` if anything."""
    upstream: Any = client or NoUpstream()
    call = CallContext(cfg=eco_config.get_config(), transport="stdio", protocol_version="2026-07-28",
                       upstream=upstream)
    return await availability.availability_from(idx, availability.AvailabilityInput(**kwargs), call)


def from_upstream(out: availability.AvailabilityOutput) -> bool:
    return out.source.origin == "upstream"


async def test_product_mode_has_one_row_per_site_with_the_upstream_months_by_release(idx, upstream):
    r = await read(idx, product=CODE, format="months")
    assert r.mode == "product" and r.resolved["product"]["productCode"] == CODE and not from_upstream(r)
    assert {row.site_code for row in r.rows} == {s for s, rels in upstream.items() if any(rels.values())}
    for row in r.rows:
        assert row.by_release == {k: v for k, v in upstream[row.site_code].items() if v}


async def test_ranges_are_the_compact_form_of_the_same_months(idx, upstream):
    row = (await read(idx, product=CODE, site_codes=["ABBY"])).rows[0]
    assert {k: expand(v) for k, v in row.by_release.items()} == {k: v for k, v in upstream["ABBY"].items() if v}
    assert all("/" in r for v in row.by_release.values() for r in v)


async def test_summary_totals_site_months_per_release(idx, upstream):
    r = await read(idx, product=CODE, format="counts")
    expected: dict[str, int] = {}
    for rels in upstream.values():
        for tag, ms in rels.items():
            if ms:
                expected[tag] = expected.get(tag, 0) + len(ms)
    assert r.summary.by_release == dict(sorted(expected.items()))


async def test_window_and_provisional_options_cut_the_lists(idx, client):
    only = await read(idx, product=CODE, provisional="only")
    assert only.rows and all(set(row.by_release) == {"PROVISIONAL"} for row in only.rows)
    released = await read(idx, client=client, product=CODE, release="RELEASE-2025", provisional="exclude",
                          start_month="2019-01", end_month="2019-06", format="months")
    assert from_upstream(released) and released.release == "RELEASE-2025"
    assert released.window == Window(start_month="2019-01", end_month="2019-06")
    assert released.rows
    for row in released.rows:
        assert set(row.by_release) == {"RELEASE-2025"}
        assert all("2019-01" <= m <= "2019-06" for months in row.by_release.values() for m in months)


async def test_site_mode_and_cell_mode(idx, upstream):
    site = await read(idx, site="ABBY", product_codes=[CODE, "DP1.10003"])
    assert site.mode == "site" and {row.product_code for row in site.rows} <= {CODE, "DP1.10003.001"}
    assert CODE in {row.product_code for row in site.rows}
    cell = await read(idx, product=CODE, site="abby")
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


async def test_a_whole_cell_read_off_the_index_answers_as_shaping_its_intervals(idx):
    # The default call reads each cell's kept texts, count and first and last month; a call with a
    # month window shapes the cell's intervals. A window holding every month must give the same
    # rows, for every cell the catalog holds.
    cells = 0
    for p in idx.products:
        for fmt in ("ranges", "counts"):
            whole = await read(idx, product=p.code, format=fmt, limit=500)
            shaped = await read(idx, product=p.code, format=fmt, limit=500, start_month="0001-01")
            assert (whole.rows, whole.summary) == (shaped.rows, shaped.summary), (p.code, fmt)
        cells += len(whole.rows)
    assert cells > 1000


async def test_the_default_call_takes_kept_rows_that_answer_as_fresh_ones_and_stay_bounded(idx):
    first = await read(idx, product=CODE)
    again = await read(idx, product=CODE)
    assert again == first and again.rows[0] is first.rows[0]  # kept, not made again
    # Any other call shapes its rows afresh: the same months, another object.
    shaped = await read(idx, product=CODE, provisional="exclude")
    released = {r.site_code: r for r in first.rows if set(r.by_release) - {"PROVISIONAL"}}
    assert [r.site_code for r in shaped.rows] == sorted(released)
    for row in shaped.rows:
        assert row is not released[row.site_code]
        assert row.by_release == {k: v for k, v in released[row.site_code].by_release.items() if k != "PROVISIONAL"}
    memos.drop_all()
    made = 0
    for site in [s.code for s in idx.sites]:
        made += len((await read(idx, site=site, format="counts")).rows)
        assert memos.sizes()["availability.rows"] <= availability.ROWS_KEPT
    assert made > availability.ROWS_KEPT  # more rows were made than are kept
