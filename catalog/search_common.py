"""What the catalog searches (catalog.products, catalog.sites) share."""

from __future__ import annotations

from datetime import UTC, datetime

from catalog.index import CatalogIndex


def age_seconds(idx: CatalogIndex, catalog: str) -> int | None:
    """Whole seconds since `catalog` was refreshed, as `CatalogIndex.age_seconds` gives it, for
    one catalog: that property reads the local time zone and ages every catalog, a fifth of a
    kept search's own work, for the one number a search answers with. (Refresh times are aware,
    so any aware `now` gives the same difference.)"""
    info = idx.info.get(catalog)
    if info is None or info.refreshed_at is None:
        return None
    return int((datetime.now(UTC) - info.refreshed_at).total_seconds())
