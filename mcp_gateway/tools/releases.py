"""Registration of the releases family's tools (families/releases.py)."""

from __future__ import annotations

from families import releases
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_list_releases",
        title="List data releases",
        description=(
            "NEON's annual data releases (RELEASE-YYYY), newest first, from the cached release catalog (no "
            "upstream request): generation date, product count, manifest artifacts, and the latest tag. Data "
            "newer than the latest release is PROVISIONAL, which is not a release."
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
            "One release (tag, uuid or latest). include: products (default; codes, names, DOIs, paged, "
            "filtered by product_query), sites (one upstream query), artifacts, all. product_code / site_code "
            "add that product or site as published in the release."
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
