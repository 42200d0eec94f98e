"""eco_get_release names a product the product catalog lacks (withdrawn from GET /products) from
the release record itself, name and DOI, so a product_query finds it; over HTTP through the SDK."""

from __future__ import annotations

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session

WITHDRAWN = "DP1.00090.001"


async def test_a_product_missing_from_the_catalog_keeps_the_name_and_doi_its_release_record_gives(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    assert WITHDRAWN not in sim.world.products and WITHDRAWN in sim.world.withdrawn_products
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        body = assert_valid_tool_result(tools["eco_get_release"], await client.call_tool(
            "eco_get_release", {"release": "RELEASE-2024", "product_query": "aspirated"}))
        named = {p["productCode"]: p for p in body["dataProducts"]}
        assert named[WITHDRAWN]["productName"] == "Dual aspirated air temperature"
        assert "https://doi.org/" + named[WITHDRAWN]["doi"] == sim.world.product_doi(WITHDRAWN, "RELEASE-2024")["url"]
        assert {"DP1.00002.001", "DP1.00003.001"} <= set(named)
        assert all("aspirated" in p["productName"].lower() for p in body["dataProducts"])
