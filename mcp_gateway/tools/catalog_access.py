"""How the catalog-served tools reach the catalog: the warm index (built on first use), a thread
pool of its own for the synchronous reads, and the `source` of a catalog-served answer. The
output types live with each family's reads in catalog/."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from catalog.index import CHECK_INTERVAL_S, CatalogIndex, get_index, peek_index
from catalog.outage import DATABASE_DOWN
from eco_core.config import EcoConfig
from mcp_gateway import ports
from mcp_gateway.models import Source

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


async def catalog_index(cfg: EcoConfig) -> CatalogIndex:
    """The warm catalog index; builds missing catalogs first (their requests count in this
    call's accounting), so a cold stdio server still answers its first search.

    Whether anything is due is decided on the catalog-read pool; only when something is does
    ensure_catalogs build it (missing) or schedule its refresh (refresh-ahead).

    Between the index's version checks (CHECK_INTERVAL_S) the index is answered on the event
    loop, without a thread hop: the two hops cost more than a search (profiled under load), and
    whether a catalog is due is checked at most once an interval per configuration, as often
    as the index itself looks at the database.

    With the database unreachable nothing can be built or refreshed, but the index this process
    holds still answers (get_index serves it through the outage); with none held the error
    stands, and the call answers catalog_unavailable (mcp_gateway.calls)."""
    global _not_due
    idx = peek_index()
    if idx is not None and _not_due[0] is cfg and time.monotonic() < _not_due[1]:
        return idx
    # Here, not at the top: the refresh machinery (upstream client, its models, httpx) is not
    # needed to list the tools, and a stdio server lists them before anything else.
    from catalog.services import due_catalogs, ensure_catalogs

    try:
        due = await catalog_read(due_catalogs, cfg, ahead=cfg.cache.refresh_ahead)
    except DATABASE_DOWN:
        due = []
    if due:
        await ensure_catalogs(cfg, client=ports.upstream_client(), need=NEEDED)
    # Checked, and whatever was due is built (or raised above) or scheduled: not again within the
    # interval. A catalog stays due from (1 - refresh_ahead) of its TTL until a refresh lands,
    # and every catalog call in that window paid the check and two more hops to the pool.
    _not_due = (cfg, time.monotonic() + CHECK_INTERVAL_S)
    # A new index comes frozen out of the collector's full passes (catalog.index._new_index).
    return await catalog_read(get_index)
