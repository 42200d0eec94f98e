"""The taxonomy family: eco_search_taxonomy. NEON's taxon lists (`GET /taxonomy`) by type code or
by rank, rows with the Darwin Core keys verbatim, paged by the upstream's own `next` link. The
catalog is never read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, page
from families.call import CallContext
from upstream.client import UpstreamClient

TaxonType = Literal["ALGAE", "BEETLE", "BIRD", "FISH", "HERPETOLOGY", "MACROINVERTEBRATE", "MOSQUITO",
                    "MOSQUITO_PATHOGENS", "PLANT", "SMALL_MAMMAL", "TICK"]
# Input field -> the upstream's parameter; `class_` because `class` is a Python keyword.
RANKS = {"kingdom": "kingdom", "phylum": "phylum", "division": "division", "class_": "class",
         "order": "order", "family": "family", "genus": "genus"}
VERBOSE_MAX_LIMIT = 100
# The genus retry reads the whole genus (a few pages at most) to filter it locally.
FALLBACK_PAGE = 500
FALLBACK_MAX_PAGES = 4
_RANK = Field(None, min_length=1, max_length=100)


class SearchTaxonomyInput(ToolInput):
    taxon_type_code: TaxonType | None = None
    kingdom: str | None = _RANK
    phylum: str | None = _RANK
    division: str | None = _RANK
    class_: str | None = _RANK
    order: str | None = _RANK
    family: str | None = _RANK
    genus: str | None = _RANK
    scientific_name: str | None = Field(None, min_length=1, max_length=200)
    verbose: bool = Field(False, description="All ranks and extra fields (nulls dropped); limit capped at 100.")
    fuzzy_genus_fallback: bool = True
    limit: int = Field(25, ge=1, le=500)
    offset: int = Field(0, ge=0)


class SearchTaxonomyOutput(Envelope):
    items: list[dict[str, Any]]
    page: Page
    filters: dict[str, Any] = Field(description="Upstream filters sent.")
    fuzzy_fallback_used: bool


async def search_taxonomy(args: SearchTaxonomyInput, call: CallContext) -> SearchTaxonomyOutput:
    ranks = {name: value for name in RANKS if (value := getattr(args, name))}
    if args.taxon_type_code and ranks:
        raise EcoError("invalid_argument",
                       f"taxon_type_code cannot be combined with rank filters ({', '.join(sorted(ranks))}); "
                       "use one or the other",
                       details={"field": "taxon_type_code", "conflicts": sorted(ranks)})
    notes: list[str] = []
    limit = args.limit
    if args.verbose and limit > VERBOSE_MAX_LIMIT:
        notes.append(f"limit lowered from {limit} to {VERBOSE_MAX_LIMIT}: verbose rows are large.")
        limit = VERBOSE_MAX_LIMIT
    filters: dict[str, Any] = {"taxonTypeCode": args.taxon_type_code, "scientificname": args.scientific_name,
                               **{RANKS[k]: v for k, v in ranks.items()}}
    filters = {k: v for k, v in filters.items() if v}
    reply = await call.client.taxonomy(filters=filters, offset=args.offset, limit=limit, verbose=args.verbose)
    name = args.scientific_name or ""
    words = name.split()
    fallback = reply.total == 0 and args.fuzzy_genus_fallback and len(words) >= 2
    if fallback:
        rows, pg, filters = await _genus_fallback(call.client, filters, words[0], name, args.verbose, limit,
                                                  args.offset, notes)
    else:
        rows = _rows(reply.rows(), args.verbose)
        pg = Page(offset=args.offset, limit=limit, returned=len(rows), total=reply.total,
                  next_offset=reply.next_offset)
        if not rows and args.scientific_name:
            notes.append("scientific_name must match a whole name exactly; try genus instead.")
    steps: list[NextStep] = []
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        if "limit" in more:
            more["limit"] = pg.limit
        steps.append(NextStep(tool="eco_search_taxonomy", arguments={**more, "offset": pg.next_offset},
                              why="The next page of taxa."))
    return SearchTaxonomyOutput(items=rows, page=pg, filters=filters, fuzzy_fallback_used=fallback, notes=notes,
                                next_steps=steps, source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


def _rows(data: list[dict[str, Any]], verbose: bool) -> list[dict[str, Any]]:
    # Verbose rows carry ~50 ranks, most of them null for any one taxon.
    return [{k: v for k, v in r.items() if v is not None} for r in data] if verbose else data


async def _genus_fallback(client: UpstreamClient, filters: dict[str, Any], genus: str, name: str, verbose: bool,
                          limit: int, offset: int, notes: list[str]) -> tuple[list[dict[str, Any]], Page, dict[str, Any]]:
    """No taxon is named exactly `name`: read its genus and keep the names starting with it
    (rows, page, the filters applied). A type code cannot go upstream beside a rank, so it is
    applied here."""
    code = filters.get("taxonTypeCode")
    retry = {k: v for k, v in filters.items() if k not in ("scientificname", "taxonTypeCode")}
    retry["genus"] = genus
    found: list[dict[str, Any]] = []
    at: int | None = 0
    for _ in range(FALLBACK_MAX_PAGES):
        if at is None:
            break
        reply = await client.taxonomy(filters=retry, offset=at, limit=FALLBACK_PAGE, verbose=verbose)
        found.extend(reply.rows())
        at = reply.next_offset
    if at is not None:
        notes.append(f"The genus {genus} has more than {len(found)} taxa; only those were searched.")
    prefix = name.lower()
    hits = [r for r in found if str(r.get("dwc:scientificName", "")).lower().startswith(prefix)
            and (not code or r.get("taxonTypeCode") == code)]
    notes.append(f"No taxon is named exactly {name!r}; showing taxa of the genus {genus} whose names start with it.")
    kept = _rows(hits[offset: offset + limit], verbose)
    return kept, page(offset, limit, len(kept), len(hits)), {**retry, "nameStartsWith": name}
