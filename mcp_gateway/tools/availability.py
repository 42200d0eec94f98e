"""Registration of the availability family's tool (families/availability.py)."""

from __future__ import annotations

from families import availability
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_get_availability",
        title="Data availability by month",
        description=(
            "Which months have data: for a product, a row per site; for a site, a row per product; both, one "
            "cell; months split by release."
        ),
        surface="discovery",
        input_model=availability.AvailabilityInput,
        output_model=availability.AvailabilityOutput,
        read=availability.get_availability,
        endpoints=("POST /graphql", "GET /products/{productCode}", "GET /sites/{siteCode}"),
        page_lists={"rows": "page"},
    ),
]
