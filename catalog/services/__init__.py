"""Catalog business logic: refreshes (`refresh`) and the decisions of when to run them (`warm`).

    await refresh_catalog(catalog, *, client, source=None, trigger="manual") -> RefreshOutcome
    await refresh_catalogs(catalogs=CATALOGS, *, client, source=None, trigger=...) -> [RefreshOutcome]
    await prewarm(cfg, *, client=None) -> [RefreshOutcome]
    await ensure_catalogs(cfg, *, client=None, need=("products", "sites"))
    due_catalogs(cfg, *, ahead=0.0, missing_only=False) -> [catalog]
    await refresh_subtrees_ahead(cfg, *, client=None, prewarm=False) -> Task | None

`client` is anything that implements `upstream.protocol.CatalogUpstream` (the shared
`UpstreamClient` when omitted). The refresh-ahead state (`_background`, `_failed_at`) lives in
`catalog.services.warm`. The modules below import nothing from this package's `__init__`, so
re-exporting them here makes no import cycle.
"""

from __future__ import annotations

from catalog.services.refresh import RefreshOutcome, refresh_catalog, refresh_catalogs
from catalog.services.warm import due_catalogs, ensure_catalogs, prewarm, refresh_subtrees_ahead

__all__ = [
    "RefreshOutcome",
    "due_catalogs",
    "ensure_catalogs",
    "prewarm",
    "refresh_catalog",
    "refresh_catalogs",
    "refresh_subtrees_ahead",
]
