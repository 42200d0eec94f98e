"""Issue 11, the rest: release filters see every release (item 1), eco_get_site's products come
from the site's own record (item 10), driven through the SDK's MCP client over HTTP against the
real server with the simulator behind it."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from asgiref.sync import sync_to_async
from mcp import Client

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import sim_config


@asynccontextmanager
async def _client(http_server, sim, active_config, **flags: Any):  # noqa: F811
    cfg = sim_config(sim, server__transport="http", **flags)
    active_config(cfg)  # the server thread's upstream client reads the active configuration
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            client.tools = {t.name: t for t in (await client.list_tools()).tools}  # type: ignore[attr-defined]
            yield client


async def _ok(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return assert_valid_tool_result(client.tools[tool], await client.call_tool(tool, args))


async def _all(client: Any, tool: str, args: dict[str, Any], key: str = "items", page: str = "page",
               prefix: str = "") -> list[dict[str, Any]]:
    """Every item of a paged list, following nextOffset (pages the byte budget trims included)."""
    out: list[dict[str, Any]] = []
    offset = 0
    while True:
        got = await _ok(client, tool, {**args, f"{prefix}limit": 100, f"{prefix}offset": offset})
        out.extend(got[key])
        if got[page]["nextOffset"] is None:
            return out
        offset = got[page]["nextOffset"]


async def test_an_older_release_combined_with_a_site_lists_the_products_the_site_record_of_that_release_lists(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with _client(http_server, sim, active_config) as client:
        listed = await _all(client, "eco_get_site", {"site": "HARV", "release": "RELEASE-2025"},
                            key="dataProducts", page="dataProductsPage", prefix="products_")
        published = {p["productCode"] for p in listed}
        assert len(published) > 50
        found = await _all(client, "eco_search_products", {"site": "HARV", "release": "RELEASE-2025", "status": "ALL"})
        assert {p["productCode"] for p in found} == published


async def test_an_older_release_combined_with_a_product_lists_the_sites_availability_finds_in_that_release(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with _client(http_server, sim, active_config) as client:
        args = {"product": "DP1.00001.001", "release": "RELEASE-2025"}
        rows = await _all(client, "eco_get_availability", args, key="rows")
        assert len(rows) > 20
        sites = await _all(client, "eco_search_sites", args)
        assert {s["siteCode"] for s in sites} == {r["siteCode"] for r in rows}


async def test_an_older_release_combined_with_a_domain_or_a_month_finds_the_products_published_there(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with _client(http_server, sim, active_config) as client:
        d01 = await _all(client, "eco_search_products", {"domain_code": "D01", "release": "RELEASE-2024"})
        assert d01
        # Each product found has a D01 site with months in RELEASE-2024, as that release published them.
        for p in d01[:5]:
            got = await _ok(client, "eco_get_availability", {"product": p["productCode"], "release": "RELEASE-2024",
                                                             "domain_code": "D01", "limit": 1})
            assert got["summary"]["byRelease"].get("RELEASE-2024", 0) > 0, p["productCode"]
        early = await _all(client, "eco_search_products", {"release": "RELEASE-2021", "available_from": "2015-01"})
        assert early
        for p in early[:5]:
            got = await _ok(client, "eco_get_availability", {
                "product": p["productCode"], "release": "RELEASE-2021", "start_month": "2015-01", "limit": 1})
            assert got["summary"]["siteMonths"] > 0, p["productCode"]
        # A window after the release's last month finds nothing in that release, and something now.
        late = await _ok(client, "eco_search_products", {"release": "RELEASE-2021", "available_from": "2022-01"})
        assert late["items"] == []
        assert (await _ok(client, "eco_search_products", {"available_from": "2022-01"}))["items"]


def _omit_from_product_catalog(product: str, site: str) -> Any:
    """The product catalog no longer lists `site` for `product` while the site's record still
    lists the product: the upstream's product list and site list disagree. Returns the row."""
    from catalog import index
    from catalog.models import ProductSiteAvailabilityRow

    row = ProductSiteAvailabilityRow.objects.get(product_code=product, site_code=site)
    row.delete()
    index.reset()
    return row


def _restore(row: Any) -> None:
    from catalog import index

    row.pk = None
    row.save()
    index.reset()


async def test_get_site_and_search_sites_agree_on_product_count_when_product_and_site_lists_disagree(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with _client(http_server, sim, active_config) as client:
        row = await sync_to_async(_omit_from_product_catalog)("DP1.00001.001", "HARV")
        try:
            found = await _ok(client, "eco_search_sites", {"query": "HARV"})
            site = await _ok(client, "eco_get_site", {"site": "HARV", "include": ["products", "releases"],
                                                      "products_query": "DP1.00001"})
        finally:
            await sync_to_async(_restore)(row)
        assert found["items"][0]["siteCode"] == "HARV"
        assert site["productCount"] == found["items"][0]["productCount"] == len(sim.world.site_products("HARV"))
        assert [p["productCode"] for p in site["dataProducts"]] == ["DP1.00001.001"]
        # Release links come from the site record, as the upstream publishes them.
        assert site["releases"] and all(r["url"] == f"{sim.base_url}/releases/{r['release']}" for r in site["releases"])
