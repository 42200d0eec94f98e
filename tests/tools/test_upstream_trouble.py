"""Discovery tools when the upstream misbehaves: catalog answers keep working, detail sections
fail with the spec's retryable codes, and site search falls back to the catalog's elevations."""

from __future__ import annotations

import pytest

from mcp_gateway import ports
from tests.tools.conftest import error_of


@pytest.fixture
async def broken(sim, sim_cfg):
    """Every upstream cache entry dropped, so the next detail read must go to the (failing) upstream."""
    await ports.upstream_client().cache.clear()
    yield sim
    sim.faults.clear()


async def test_detail_sections_give_upstream_error_when_the_upstream_fails(run_tool, broken):
    broken.faults.add("status", route=r"^/api/v0/products/DP1\.00004\.001", status=503)
    err = error_of(await run_tool("eco_get_product", {"product": "DP1.00004.001", "include": ["abstract"]}),
                   "upstream_error")
    assert err["retryable"] is True


async def test_catalog_answers_need_no_upstream_even_while_it_fails(run_tool, broken):
    broken.faults.add("status", route=r".", status=503)
    out = await run_tool("eco_get_product", {"product": "DP1.00004.001"})
    assert out.ok["productCode"] == "DP1.00004.001" and out.requests == 0
    assert (await run_tool("eco_get_availability", {"product": "DP1.00004.001", "site": "HARV"})).requests == 0
    assert (await run_tool("eco_search_sites", {"query": "HARV"})).ok["items"][0]["siteCode"] == "HARV"


async def test_site_search_elevations_fall_back_to_the_catalog_with_a_note(run_tool, broken):
    broken.faults.add("status", route=r"^/api/v0/locations/sites", status=503)
    body = (await run_tool("eco_search_sites", {"query": "HARV", "include_elevation": True})).ok
    item = body["items"][0]
    assert item["elevation"] == broken.world.sites["HARV"]["_elevation"]
    assert any("cached catalog" in n for n in body["notes"])


async def test_location_section_gives_upstream_unavailable_when_the_connection_resets(run_tool, broken):
    broken.faults.add("reset", route=r"^/api/v0/locations/BLAN")
    err = error_of(await run_tool("eco_get_site", {"site": "BLAN", "include": ["location"]}), "upstream_unavailable")
    assert err["retryable"] is True
