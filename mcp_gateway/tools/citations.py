"""Registration of the citations family's tool (families/citations.py)."""

from __future__ import annotations

from families import citations
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_get_citation",
        title="Cite a data product",
        description=(
            "Cite a data product in a release (NEON data policy, CC BY 4.0) or a prototype dataset: text and "
            "BibTeX, the DOI checked against the release record."
        ),
        surface="discovery",
        input_model=citations.GetCitationInput,
        output_model=citations.GetCitationOutput,
        read=citations.get_citation,
        endpoints=("GET /releases", "GET /prototype/datasets/{uuid}"),
    ),
]
