"""The one way a read reaches the catalog: the warm index with the catalogs it needs built (on
first use, counted in the calling tool's accounting), a thread pool of its own for the synchronous
reads, and the `source` of a catalog-served answer.

    await catalog_index(cfg, client, need=("products", "sites")) -> CatalogIndex
    await location_catalog(cfg, client) -> LocationCatalog
    await catalog_read(fn, *args) -> fn(*args) on the catalog-read pool
    catalog_source(cfg, endpoints) -> Source
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from catalog.checks import built
from catalog.index import CHECK_INTERVAL_S, CatalogIndex, get_index, peek_index
from catalog.outage import DATABASE_DOWN
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import Source

if TYPE_CHECKING:
    from catalog.locations import LocationCatalog
    from upstream.client import UpstreamClient

NEEDED = ("products", "sites")
T = TypeVar("T")

# Catalog reads (the in-memory index, and its once-a-second version check in the database) run
# on their own few threads. asgiref's default (thread_sensitive=True) runs every sync call of
# the process on ONE shared thread, so catalog-served calls queued there behind everyone else's
# sync work; a bounded pool of their own keeps them moving and caps their DB connections.
CATALOG_READ_THREADS = 4
_catalog_pool = ThreadPoolExecutor(max_workers=CATALOG_READ_THREADS, thread_name_prefix="eco-catalog-read")
# (configuration, monotonic deadline): that configuration's catalogs were checked (and anything
# due built or scheduled) recently enough; not checked again until then.
_not_due: tuple[EcoConfig | None, float] = (None, 0.0)


def _closing_connections(fn: Callable[..., T]) -> Callable[..., T]:
    def run(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            # A pool thread's connection would otherwise live as long as the thread (and keep a
            # test database from being dropped); the index touches the database at most once a
            # second, so reconnecting then costs little.
            connections.close_all()

    return run


async def catalog_read(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` (sync: index, search, ORM) on the catalog-read pool."""
    return await sync_to_async(_closing_connections(fn), thread_sensitive=False, executor=_catalog_pool)(
        *args, **kwargs)


def catalog_source(cfg: EcoConfig, endpoints: list[str]) -> Source:
    return Source(origin="catalog", endpoints=endpoints, api_base_url=cfg.eco.base_url)


async def catalog_index(cfg: EcoConfig, client: UpstreamClient, *,
                        need: tuple[str, ...] = NEEDED) -> CatalogIndex:
    """The warm catalog index with every catalog of `need` built; missing ones are built first
    (their requests count in this call's accounting), so a cold stdio server still answers its
    first search.

    Whether anything is due is decided on the catalog-read pool; only when something is does
    ensure_catalogs build it (missing) or schedule its refresh (refresh-ahead). Between the
    index's version checks (CHECK_INTERVAL_S) the index is answered on the event loop, without a
    thread hop: the two hops cost more than a search, and whether a catalog is due is checked at
    most once an interval per configuration, as often as the index itself looks at the database.

    With the database unreachable nothing can be built or refreshed, but the index this process
    holds still answers (get_index serves it through the outage); with none held the error
    stands, and the call answers catalog_unavailable (mcp_gateway.calls)."""
    global _not_due
    idx = peek_index()
    if not (idx is not None and _not_due[0] is cfg and time.monotonic() < _not_due[1]):
        # Here, not at the top: the refresh machinery (upstream client, its models, httpx) is not
        # needed to list the tools, and a stdio server lists them before anything else.
        from catalog.services import due_catalogs, ensure_catalogs

        try:
            due = await catalog_read(due_catalogs, cfg, ahead=cfg.cache.refresh_ahead)
        except DATABASE_DOWN:
            due = []
        if due:
            await ensure_catalogs(cfg, client=client, need=NEEDED)
        # Checked, and whatever was due is built (or raised above) or scheduled: not again within
        # the interval. A catalog stays due from (1 - refresh_ahead) of its TTL until a refresh
        # lands, and every catalog call in that window paid the check and two more hops.
        _not_due = (cfg, time.monotonic() + CHECK_INTERVAL_S)
        # A new index comes frozen out of the collector's full passes (catalog.index._new_index).
        idx = await catalog_read(get_index)
    extra = [c for c in need if c not in NEEDED]
    if extra:
        try:
            for catalog in extra:
                built(idx, catalog)
        except EcoError:
            from catalog.services import ensure_catalogs

            await ensure_catalogs(cfg, client=client, need=tuple(extra))
            idx = await catalog_read(get_index)
            for catalog in extra:
                built(idx, catalog)
    return idx


async def location_catalog(cfg: EcoConfig, client: UpstreamClient) -> LocationCatalog:
    """The SITE and DOMAIN rows and the stored subtrees (read later on the catalog-read pool); a
    missing locations catalog is built first (counted in this call). Missing subtrees are not
    built here: that is 81 requests, left to their scheduled refresh (catalog.tasks) or, without
    a broker, to the background refresh-ahead started here (never waited for)."""
    from catalog import locations
    from catalog.services import due_catalogs, ensure_catalogs, refresh_subtrees_ahead  # not to list tools

    if "locations" in await catalog_read(due_catalogs, cfg, missing_only=True):
        await ensure_catalogs(cfg, client=client, need=("locations",))
    await refresh_subtrees_ahead(cfg, client=client)
    return await catalog_read(locations.location_catalog, catalog_read)
