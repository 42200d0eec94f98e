"""eco_get_document names every product whose specs list the document, and the document's
description and type, from the catalog, without `product` given; over HTTP through the SDK."""

from __future__ import annotations

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session

SHARED = "NEON.DOC.004659vE"  # listed by two products' specs


async def test_a_document_lists_every_product_that_references_it_and_its_description_without_product(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    owners = sorted(c for c, p in sim.world.products.items() if any(s["specNumber"] == SHARED for s in p["specs"]))
    spec = next(s for s in sim.world.products[owners[0]]["specs"] if s["specNumber"] == SHARED)
    assert len(owners) == 2
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        body = assert_valid_tool_result(tools["eco_get_document"], await client.call_tool(
            "eco_get_document", {"spec_number": SHARED}))
        assert body["referencedByProducts"] == owners
        assert body["specDescription"] == spec["specDescription"] and body["specType"] == spec["specType"]
        with_product = assert_valid_tool_result(tools["eco_get_document"], await client.call_tool(
            "eco_get_document", {"spec_number": SHARED, "product": owners[1]}))
        assert with_product["referencedByProducts"] == owners
