"""eco_search_taxonomy: NEON's taxon lists by type code or by rank, rows with the Darwin Core
keys verbatim, paged by the upstream's own next link."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from catalog.taxonomy import search_taxonomy
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec

TaxonType = Literal["ALGAE", "BEETLE", "BIRD", "FISH", "HERPETOLOGY", "MACROINVERTEBRATE", "MOSQUITO",
                    "MOSQUITO_PATHOGENS", "PLANT", "SMALL_MAMMAL", "TICK"]
_RANK = Field(None, min_length=1, max_length=100)


class SearchTaxonomyInput(ToolInput):
    taxon_type_code: TaxonType | None = Field(None, description="Cannot be combined with a rank filter.")
    kingdom: str | None = _RANK
    phylum: str | None = _RANK
    division: str | None = _RANK
    class_: str | None = _RANK
    order: str | None = _RANK
    family: str | None = _RANK
    genus: str | None = _RANK
    scientific_name: str | None = Field(None, min_length=1, max_length=200, description="Exact name.")
    verbose: bool = Field(False, description="All ranks and extra fields (nulls dropped); limit capped at 100.")
    fuzzy_genus_fallback: bool = Field(True, description=(
        "An unmatched 'Genus species' is retried by genus, keeping names that start with it."))
    limit: int = Field(25, ge=1, le=500)
    offset: int = Field(0, ge=0)


class SearchTaxonomyOutput(Envelope):
    items: list[dict[str, Any]] = Field(description="Taxon rows, Darwin Core keys verbatim.")
    page: Page
    filters: dict[str, Any] = Field(description="Upstream filters sent.")
    fuzzy_fallback_used: bool


async def search_taxonomy_tool(args: SearchTaxonomyInput, call: CallContext) -> SearchTaxonomyOutput:
    ranks = {"kingdom": args.kingdom, "phylum": args.phylum, "division": args.division, "class_": args.class_,
             "order": args.order, "family": args.family, "genus": args.genus}
    r = await search_taxonomy(ports.upstream_client(), taxon_type_code=args.taxon_type_code, ranks=ranks,
                              scientific_name=args.scientific_name, verbose=args.verbose,
                              fuzzy_genus_fallback=args.fuzzy_genus_fallback, limit=args.limit, offset=args.offset)
    steps: list[NextStep] = []
    if r.page.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        if "limit" in more:
            more["limit"] = r.page.limit
        steps.append(NextStep(tool="eco_search_taxonomy", arguments={**more, "offset": r.page.next_offset},
                              why="The next page of taxa."))
    notes = list(r.notes)
    if not r.items and not r.fuzzy_fallback_used and args.scientific_name:
        notes.append("scientific_name must match a whole name exactly; try genus instead.")
    return SearchTaxonomyOutput(items=r.items, page=r.page, filters=r.filters,
                                fuzzy_fallback_used=r.fuzzy_fallback_used, notes=notes, next_steps=steps,
                                source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


TOOLS = [
    ToolSpec(
        name="eco_search_taxonomy",
        title="Search taxonomy",
        description=(
            "NEON taxon lists: by taxon_type_code, or by rank (kingdom, phylum, division, class_, order, "
            "family, genus), not both; scientific_name matches exactly, with an unmatched 'Genus species' "
            "retried by genus (fuzzyFallbackUsed). Rows keep Darwin Core keys (dwc:scientificName, "
            "dwc:vernacularName, ...). Continue with offset = page.nextOffset."
        ),
        surface="discovery",
        input_model=SearchTaxonomyInput,
        output_model=SearchTaxonomyOutput,
        read=search_taxonomy_tool,
        endpoints=("GET /taxonomy",),
    ),
]
