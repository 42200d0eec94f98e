"""Registration of the prototypes family's tools (families/prototypes.py)."""

from __future__ import annotations

from families import prototypes
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_search_prototype_datasets",
        title="Search prototype datasets",
        description=(
            "Search NEON's prototype (experimental) datasets, each with its own DOI. The list is cached and "
            "searched locally. Filter by query words (title, abstract, keywords), theme prefix, science team, "
            "site code, years (overlap), file type, published. Returns summaries, paging and facets."
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
            "One prototype dataset by uuid: title, abstract, years, DOI, themes, teams, sites, keywords. include: "
            "files (default; sizes, MD5s, signed URLs unless include_urls=false; paged), locations (default), "
            "descriptions, citations, related, or all. Text is clipped to text_budget characters."
        ),
        surface="discovery",
        input_model=prototypes.GetPrototypeInput,
        output_model=prototypes.GetPrototypeOutput,
        read=prototypes.get_prototype_dataset,
        endpoints=("GET /prototype/datasets/{uuid}", "GET /prototype/data/{uuid}"),
        page_lists={"files": "filesPage"},
    ),
]
