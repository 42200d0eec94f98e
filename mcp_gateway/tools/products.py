"""Registration of the products family's tools (families/products.py)."""

from __future__ import annotations

from families import products
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_search_products",
        title="Search data products",
        description=(
            "Find data products (~200, cached) by words, theme, team, status, level, expanded package, data at a "
            "site or domain, release or months; scored, with facets."
        ),
        surface="discovery",
        input_model=products.SearchProductsInput,
        output_model=products.SearchProductsOutput,
        read=products.search_products,
        endpoints=("POST /graphql", "GET /products"),
    ),
    ToolSpec(
        name="eco_get_product",
        title="Data product record",
        description=(
            "One data product's record (releases with DOIs, availability summary); include adds sections "
            "(specs: its documents; change_logs, availability: paged)."
        ),
        surface="discovery",
        input_model=products.GetProductInput,
        output_model=products.GetProductOutput,
        read=products.get_product,
        endpoints=("POST /graphql", "GET /products/{productCode}"),
        page_lists={"changeLogs": "changeLogsPage", "availabilityRows": "availabilityPage"},
    ),
]
