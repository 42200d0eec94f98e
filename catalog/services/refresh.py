"""Building each catalog from the upstream and swapping it in.

    await refresh_catalog("products", client=client, source=None, trigger="manual") -> RefreshOutcome
    await refresh_catalogs(CATALOGS, client=client, ...) -> list[RefreshOutcome]

Upstream requests per catalog (no retries):
    products + sites together   1 GraphQL request (CATALOG_QUERY), or 2 REST (/products, /sites)
    products alone, sites alone 1 GraphQL request, or 1 REST
    releases                    1 REST (/releases; GraphQL has no releases root)
    locations                   2 REST (/locations/sites and /locations/REALM?hierarchy=true&locationType=DOMAIN;
                                GraphQL has no "all SITE locations" root)
so a full refresh is 4 requests from GraphQL, 5 from REST.

Source: `source=None` uses GraphQL when `eco.prefer_graphql` is on and the client's GraphQL
breaker is closed, and falls back to REST when GraphQL fails or answers something that does not
parse. `source="graphql"` or `"rest"` forces one (no fallback). A failed refresh keeps the old
catalog, records the error on the catalog's state and in the refresh log, and never raises.

Each swapped catalog records the upstream it was built from (the client's REST base and GraphQL
URL); catalog.status.upstream_mismatch compares them with the configured upstream.

REST reads skip the upstream answer cache (`fresh=True`): a catalog's age says when the upstream
last answered, so an answer cached earlier, or served stale-if-error during an outage, must not
reset it. An outage therefore fails the refresh, which readiness reports as degraded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.db import models
from pydantic import ValidationError

import catalog.services.build as build
import catalog.services.swap as swap
from catalog.models import (
    CATALOGS,
    LocationRow,
    ProductRow,
    ProductSiteAvailabilityRow,
    ReleaseRow,
    SiteRow,
)
from catalog.services.graphql_queries import QUERIES
from eco_core.config import EcoConfig, get_config
from eco_core.errors import EcoError
from eco_core.memory import release_freed
from upstream import models as m
from upstream.context import call_scope
from upstream.protocol import CatalogUpstream

log = logging.getLogger("eco.catalog.refresh")

BuildSource = Literal["graphql", "rest"]
GRAPHQL_CATALOGS = ("products", "sites")


@dataclass
class RefreshOutcome:
    catalog: str
    ok: bool
    source: str | None
    rows: int
    requests: int
    seconds: float
    version: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _describe(exc: Exception) -> str:
    if isinstance(exc, EcoError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, ValidationError):
        return f"upstream_error: reply did not match the expected shape ({exc.error_count()} errors; first: {exc.errors()[0]['loc']} {exc.errors()[0]['msg']})"
    return f"{type(exc).__name__}: {exc}"


# -- fetching ------------------------------------------------------------------------------

# What one catalog's fetch returns: the client's own record models, built into rows directly.
# Products and sites from GraphQL are read a record at a time as they are iterated.
Records = Iterable[m.Product] | Iterable[m.Site] | list[m.Release] | tuple[list[m.Location], m.Location]
Tables = list[tuple[type[models.Model], list[models.Model]]]


async def _graphql(client: CatalogUpstream, key: str) -> dict[str, Iterable[Any]]:
    # Each list is read from the reply a record at a time while its rows are built: the records
    # of the whole reply alive at once were the start-up build's memory peak.
    query, model = QUERIES[key]
    return await client.graphql_lists(query, model=model, kind="catalog")


async def _rest(client: CatalogUpstream, catalog: str) -> Records:
    if catalog == "products":
        return await client.products(fresh=True)
    if catalog == "sites":
        return await client.sites(fresh=True)
    if catalog == "releases":
        return await client.releases(fresh=True)
    if catalog == "locations":
        sites = await client.location_sites(fresh=True)
        realm = await client.location("REALM", hierarchy=True, location_type="DOMAIN", fresh=True)
        return sites, realm
    raise ValueError(f"unknown catalog {catalog!r}")


def _rows(catalog: str, records: Any) -> tuple[Tables, int]:
    # `records` is what `_graphql`/`_rest` fetched for this catalog (see `Records`).
    if catalog == "products":
        products, cells = build.build_products(records)
        return [(ProductRow, list(products)), (ProductSiteAvailabilityRow, list(cells))], len(products)
    if catalog == "sites":
        sites = build.build_sites(records)
        return [(SiteRow, list(sites))], len(sites)
    if catalog == "releases":
        releases = build.build_releases(records)
        return [(ReleaseRow, list(releases))], len(releases)
    locations = build.build_locations(*records)
    return [(LocationRow, list(locations))], len(locations)


def _want_graphql(client: CatalogUpstream, cfg: EcoConfig, source: BuildSource | None) -> bool:
    if source is not None:
        return source == "graphql"
    return cfg.eco.prefer_graphql and client.graphql_available


# -- refresh -------------------------------------------------------------------------------

async def _store(catalog: str, records: Any, *, client: CatalogUpstream, source: str, trigger: str,
                 started: datetime, t0: float, requests: int) -> RefreshOutcome:
    # Building a catalog's rows is seconds of pure Python: off the event loop, so the calls it
    # serves meanwhile are slowed (the GIL), not stopped.
    tables, count = await asyncio.to_thread(_rows, catalog, records)
    if catalog in ("products", "sites") and count == 0:
        # An empty product or site list is an upstream fault, not a catalog: keep the old one.
        raise EcoError("upstream_error", f"upstream returned an empty {catalog} list")
    # The client's own addresses, not the configuration's: the rows came from where it sent.
    version = await sync_to_async(swap.swap_catalog)(catalog, tables, source=source, row_count=count,
                                                     rest_base=client.base_url, graphql_url=client.graphql_url)
    await sync_to_async(swap.log_refresh)(catalog=catalog, source=source, trigger=trigger, started_at=started,
                                          ok=True, rows=count, requests=requests)
    _notify_index()
    return RefreshOutcome(catalog, True, source, count, requests, time.perf_counter() - t0, version)


async def _failed(catalog: str, exc: Exception, *, source: str | None, trigger: str, started: datetime,
                  t0: float, requests: int) -> RefreshOutcome:
    error = _describe(exc)
    log.warning("catalog refresh of %s failed (%s); the previous catalog is kept", catalog, error)
    await sync_to_async(swap.record_failure)(catalog, error)
    await sync_to_async(swap.log_refresh)(catalog=catalog, source=source or "", trigger=trigger, started_at=started,
                                          ok=False, rows=0, requests=requests, error=error)
    return RefreshOutcome(catalog, False, source, 0, requests, time.perf_counter() - t0, None, error)


async def refresh_catalogs(
    catalogs: tuple[str, ...] | list[str] = CATALOGS,
    *,
    client: CatalogUpstream,
    source: BuildSource | None = None,
    trigger: str = "manual",
    cfg: EcoConfig | None = None,
) -> list[RefreshOutcome]:
    """Refresh the named catalogs, products and sites from a single GraphQL request when both
    are asked for. Never raises for upstream trouble; see each outcome."""
    cfg = cfg or get_config()
    for c in catalogs:
        if c not in CATALOGS:
            raise EcoError("invalid_argument", f"catalog: unknown catalog {c!r}; valid: {', '.join(CATALOGS)}")
    outcomes: list[RefreshOutcome] = []
    todo = [c for c in CATALOGS if c in catalogs]
    gql = [c for c in todo if c in GRAPHQL_CATALOGS]
    if gql and _want_graphql(client, cfg, source):
        started, t0 = datetime.now(UTC), time.perf_counter()
        with call_scope() as acct:
            try:
                fetched = await _graphql(client, "+".join(gql))
            except Exception as exc:
                fetched, gql_error = None, exc
        for i, c in enumerate(gql):
            requests = acct.requests if i == 0 else 0  # one shared request: counted once
            if fetched is None:
                if source == "graphql":
                    outcomes.append(await _failed(c, gql_error, source="graphql", trigger=trigger, started=started,
                                                  t0=t0, requests=requests))
                    todo.remove(c)
                else:
                    log.info("GraphQL catalog fetch failed (%s); building %s from REST", _describe(gql_error), c)
                continue
            # Each catalog's records are let go once its rows are stored, not held to the end.
            records = fetched.pop(c)
            try:
                outcomes.append(await _store(c, records, client=client, source="graphql", trigger=trigger, started=started,
                                             t0=t0, requests=requests))
                todo.remove(c)
            except Exception as exc:
                if source == "graphql":
                    outcomes.append(await _failed(c, exc, source="graphql", trigger=trigger, started=started,
                                                  t0=t0, requests=requests))
                    todo.remove(c)
            del records
    for c in todo:
        outcomes.append(await _refresh_rest(c, client=client, trigger=trigger))
    await sync_to_async(swap.close_connection)()
    release_freed()
    return outcomes


async def _refresh_rest(catalog: str, *, client: CatalogUpstream, trigger: str) -> RefreshOutcome:
    started, t0 = datetime.now(UTC), time.perf_counter()
    with call_scope() as acct:
        try:
            records = await _rest(client, catalog)
            if acct.stale_served:
                # A client that ignored `fresh` must still not pass a stale answer off as new.
                raise EcoError("upstream_unavailable", f"the upstream gave no fresh {catalog} list (it failed or did "
                               "not answer); only a stale cached one was available")
        except Exception as exc:
            return await _failed(catalog, exc, source="rest", trigger=trigger, started=started, t0=t0,
                                 requests=acct.requests)
    try:
        return await _store(catalog, records, client=client, source="rest", trigger=trigger, started=started, t0=t0,
                            requests=acct.requests)
    except Exception as exc:
        return await _failed(catalog, exc, source="rest", trigger=trigger, started=started, t0=t0,
                             requests=acct.requests)


async def refresh_catalog(catalog: str, *, client: CatalogUpstream, source: BuildSource | None = None, trigger: str = "manual",
                          cfg: EcoConfig | None = None) -> RefreshOutcome:
    (outcome,) = await refresh_catalogs((catalog,), client=client, source=source, trigger=trigger, cfg=cfg)
    return outcome


def _notify_index() -> None:
    from catalog import index

    index.mark_dirty()
