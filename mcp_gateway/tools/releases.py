"""Registration of the releases family's tools (families/releases.py)."""

from __future__ import annotations

from families import releases
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_list_releases",
        title="List data releases",
        description=(
            "NEON's annual releases (RELEASE-YYYY), newest first: generation date, product count, artifacts, and "
            "the latest tag. Newer data is PROVISIONAL, not a release."
        ),
        surface="discovery",
        input_model=releases.ListReleasesInput,
        output_model=releases.ListReleasesOutput,
        read=releases.list_releases,
        endpoints=("GET /releases",),
    ),
    ToolSpec(
        name="eco_get_release",
        title="Data release record",
        description=(
            "One release (tag, uuid or latest): its products (DOIs; paged, product_query), sites, artifacts; "
            "product_code or site_code shows that product or site as published in it."
        ),
        surface="discovery",
        input_model=releases.GetReleaseInput,
        output_model=releases.GetReleaseOutput,
        read=releases.get_release,
        endpoints=("GET /releases/{releaseIdentifier}", "POST /graphql", "GET /releases/{releaseTag}/products/{productCode}",
                   "GET /releases/{releaseTag}/sites/{siteCode}"),
        page_lists={"dataProducts": "productsPage"},
    ),
]
