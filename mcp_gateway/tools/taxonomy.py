"""Registration of the taxonomy family's tool (families/taxonomy.py)."""

from __future__ import annotations

from families import taxonomy
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_search_taxonomy",
        title="Search taxonomy",
        description=(
            "NEON taxon lists by taxon_type_code or else one rank (kingdom ... genus); scientific_name matches "
            "exactly (an unmatched 'Genus species' retried by genus unless fuzzy_genus_fallback=false). Rows "
            "keep Darwin Core keys (dwc:scientificName, ...)."
        ),
        surface="discovery",
        input_model=taxonomy.SearchTaxonomyInput,
        output_model=taxonomy.SearchTaxonomyOutput,
        read=taxonomy.search_taxonomy,
        endpoints=("GET /taxonomy",),
    ),
]
