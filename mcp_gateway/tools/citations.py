"""Registration of the citations family's tool (families/citations.py)."""

from __future__ import annotations

from families import citations
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_get_citation",
        title="Cite a data product",
        description=(
            "Citation text and BibTeX (@misc) for a data product (code or name) in a release, following NEON's "
            "data policy (CC BY 4.0), or for a prototype dataset (prototype_uuid; exactly one of the two). "
            "The DOI is cross-checked against the release record; "
            "disagreements are in notes. No upstream request for products once the catalog is warm."
        ),
        surface="discovery",
        input_model=citations.GetCitationInput,
        output_model=citations.GetCitationOutput,
        read=citations.get_citation,
        endpoints=("GET /releases", "GET /prototype/datasets/{uuid}"),
    ),
]
