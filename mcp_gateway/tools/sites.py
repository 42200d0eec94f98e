"""Registration of the sites family's tools (families/sites.py)."""

from __future__ import annotations

from families import sites
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_search_sites",
        title="Search field sites",
        description=(
            "Find NEON's 81 field sites by code, name words, state, domain, site type, a product with data there,"
            " release, or nearness to latitude/longitude (within radius_km)."
        ),
        surface="discovery",
        input_model=sites.SearchSitesInput,
        output_model=sites.SearchSitesOutput,
        read=sites.search_sites,
        endpoints=("POST /graphql", "GET /sites", "GET /locations/sites"),
    ),
    ToolSpec(
        name="eco_get_site",
        title="Field site record",
        description=(
            "One field site by code or name: type, state, domain, coordinates, latest release; include adds "
            "products (month ranges, paged), releases, description, location (elevation, UTM)."
        ),
        surface="discovery",
        input_model=sites.GetSiteInput,
        output_model=sites.GetSiteOutput,
        read=sites.get_site,
        endpoints=("GET /sites/{siteCode}", "GET /locations/{locationName}"),
        page_lists={"dataProducts": "dataProductsPage"},
    ),
]
