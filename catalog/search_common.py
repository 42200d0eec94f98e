"""What the searches over the catalog index share (the products and sites families)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from catalog.index import CatalogIndex
from eco_core.memo import KeptByValue, memos
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
    """Searches kept per index, a table of the memo registry (emptied when the index changes):
    a built index never changes, so a search's matches are a function of its filters and the
    index. Bounded; the oldest goes first. Each entry holds its index, so a search is never
    answered for another index."""

    def __init__(self, name: str, *, max_entries: int) -> None:
        self.table: KeptByValue[tuple[CatalogIndex, Found[H]]] = memos.by_value(name, max_entries=max_entries)

    def found(self, idx: CatalogIndex, key: tuple[Any, ...], make: Callable[[], Found[H]]) -> Found[H]:
        """The kept search of `key` over `idx`, made (and kept) when there is none."""
        held = self.table.get((id(idx), key))
        if held is not None and held[0] is idx:
            return held[1]
        found = make()
        self.table.put((id(idx), key), (idx, found))
        return found
