"""Registration of the prototypes family's tools (families/prototypes.py)."""

from __future__ import annotations

from families import prototypes
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_search_prototype_datasets",
        title="Search prototype datasets",
        description=(
            "Find NEON's prototype (experimental) datasets, each with its own DOI, by words, theme, team, site, "
            "years, file type, published; summaries with facets."
        ),
        surface="discovery",
        input_model=prototypes.SearchPrototypesInput,
        output_model=prototypes.SearchPrototypesOutput,
        read=prototypes.search_prototype_datasets,
        endpoints=("GET /prototype/datasets",),
    ),
    ToolSpec(
        name="eco_get_prototype_dataset",
        title="Prototype dataset record",
        description=(
            "One prototype dataset's record by uuid; include adds files (signed URLs; paged), locations, "
            "descriptions, citations, related."
        ),
        surface="discovery",
        input_model=prototypes.GetPrototypeInput,
        output_model=prototypes.GetPrototypeOutput,
        read=prototypes.get_prototype_dataset,
        endpoints=("GET /prototype/datasets/{uuid}", "GET /prototype/data/{uuid}"),
        page_lists={"files": "filesPage"},
    ),
]
