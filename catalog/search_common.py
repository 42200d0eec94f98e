"""What the catalog searches (catalog.products, catalog.sites) share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from catalog.index import CatalogIndex
from eco_core.wire import page

H = TypeVar("H")


@dataclass(frozen=True)
class Found(Generic[H]):
    """One search's matches, whatever page is asked: sorted hits, facets over all of them, the
    suggestions when none, and how names were resolved."""

    hits: list[H]
    facets: dict[str, dict[str, int]]
    did_you_mean: list[str] | None
    resolved: dict[str, dict[str, Any]]

    def page_of(self, offset: int, limit: int) -> dict[str, Any]:
        """The fields of a search result for one page, each container a copy: a caller changing
        its answer never changes the kept search."""
        items = self.hits[offset:offset + limit]
        return {"items": items, "total": len(self.hits), "page": page(offset, limit, len(items), len(self.hits)),
                "facets": {name: dict(counts) for name, counts in self.facets.items()},
                "did_you_mean": list(self.did_you_mean) if self.did_you_mean is not None else None,
                "resolved": {name: dict(echo) for name, echo in self.resolved.items()}}


class KeptSearches(Generic[H]):
    """Searches kept for the latest index only: a built index never changes, so a search's
    matches are a function of its filters and the index. Agents page through one search and
    many ask the same few, and each page re-ran matching, scoring, facets and, for a miss, a
    fuzzy pass (most of a search tool's own work). Bounded; the oldest goes first."""

    def __init__(self) -> None:
        self._idx: CatalogIndex | None = None
        self._held: dict[tuple[Any, ...], Found[H]] = {}

    def held(self, idx: CatalogIndex) -> dict[tuple[Any, ...], Found[H]]:
        if self._idx is not idx:
            self._idx, self._held = idx, {}
        return self._held

    def found(self, idx: CatalogIndex, key: tuple[Any, ...], bound: int, make: Callable[[], Found[H]]) -> Found[H]:
        held = self.held(idx)
        found = held.get(key)
        if found is None:
            found = make()
            if len(held) >= bound:
                held.pop(next(iter(held)), None)
            held[key] = found
        return found
