"""The taxonomy family's read: NEON's taxon lists (`GET /taxonomy`), rows with the Darwin Core
keys verbatim, paged by the upstream's own `next` link.

    search_taxonomy(client, taxon_type_code=, ranks=, scientific_name=, verbose=,
                    fuzzy_genus_fallback=, limit=, offset=) -> TaxonomyResult
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eco_core.errors import EcoError
from eco_core.wire import Page, page
from upstream.client import UpstreamClient

# Input field -> the upstream's parameter; `class_` because `class` is a Python keyword.
RANKS = {"kingdom": "kingdom", "phylum": "phylum", "division": "division", "class_": "class",
         "order": "order", "family": "family", "genus": "genus"}
VERBOSE_MAX_LIMIT = 100
# The genus retry reads the whole genus (a few pages at most) to filter it locally.
FALLBACK_PAGE = 500
FALLBACK_MAX_PAGES = 4


@dataclass(frozen=True)
class TaxonomyResult:
    items: list[dict[str, Any]]
    page: Page
    filters: dict[str, Any]
    fuzzy_fallback_used: bool
    notes: list[str] = field(default_factory=list)


def _rows(data: list[dict[str, Any]], verbose: bool) -> list[dict[str, Any]]:
    # Verbose rows carry ~50 ranks, most of them null for any one taxon.
    return [{k: v for k, v in r.items() if v is not None} for r in data] if verbose else data


async def search_taxonomy(client: UpstreamClient, *, taxon_type_code: str | None, ranks: dict[str, str | None],
                          scientific_name: str | None, verbose: bool, fuzzy_genus_fallback: bool,
                          limit: int, offset: int) -> TaxonomyResult:
    given = {name: value for name, value in ranks.items() if value}
    if taxon_type_code and given:
        raise EcoError("invalid_argument",
                       f"taxon_type_code cannot be combined with rank filters ({', '.join(sorted(given))}); "
                       "use one or the other",
                       details={"field": "taxon_type_code", "conflicts": sorted(given)})
    notes: list[str] = []
    if verbose and limit > VERBOSE_MAX_LIMIT:
        notes.append(f"limit lowered from {limit} to {VERBOSE_MAX_LIMIT}: verbose rows are large.")
        limit = VERBOSE_MAX_LIMIT
    filters: dict[str, Any] = {"taxonTypeCode": taxon_type_code, "scientificname": scientific_name,
                               **{RANKS[k]: v for k, v in given.items()}}
    filters = {k: v for k, v in filters.items() if v}
    reply = await client.taxonomy(filters=filters, offset=offset, limit=limit, verbose=verbose)
    words = (scientific_name or "").split()
    if reply.total == 0 and fuzzy_genus_fallback and len(words) >= 2:
        return await _genus_fallback(client, filters, words[0], scientific_name or "", verbose, limit, offset, notes)
    rows = _rows(reply.rows(), verbose)
    pg = Page(offset=offset, limit=limit, returned=len(rows), total=reply.total, next_offset=reply.next_offset)
    return TaxonomyResult(rows, pg, filters, False, notes)


async def _genus_fallback(client: UpstreamClient, filters: dict[str, Any], genus: str, name: str, verbose: bool,
                          limit: int, offset: int, notes: list[str]) -> TaxonomyResult:
    """No taxon is named exactly `name`: read its genus and keep the names starting with it.
    A type code cannot go upstream beside a rank, so it is applied here."""
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
    return TaxonomyResult(kept, page(offset, limit, len(kept), len(hits)), {**retry, "nameStartsWith": name},
                          True, notes)
