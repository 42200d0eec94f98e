"""The subtree refresh: every site's location subtree stored in the location catalog.

    await refresh_location_subtrees(client=client, trigger="manual") -> RefreshOutcome
    pause_before_next(rate_limit_info) -> seconds

What it stores (LocationNodeRow, swapped as the `subtrees` catalog): for each SITE row of the
locations catalog, the site's `GET /locations/{site}?hierarchy=true` tree (the site and every
node below it, in the upstream's order) and each node's plain record from GraphQL
`findLocations` (NEON takes up to 1000 names per query, so the records of many sites come in one
request). Upstream cost: one REST request per site (81) plus ceil(nodes / 1000) GraphQL requests
(5 on the simulator's ~4,800 nodes; live NEON has a few hundred nodes per site).

Why a task of its own and not part of `refresh_catalogs`: the four catalogs cost 4-5 requests
and are refreshed every `cache.ttl_s.catalog`; this walk costs ~90, so it runs on the
`cache.ttl_s.locations` interval (Celery beat entry "eco: refresh location subtrees", created by
catalog.schedule); without a broker, in the background of the serving process (after the HTTP
start's prewarm, and ahead of expiry: catalog.services.warm); or when asked (admin "Refresh now"
on the subtrees row, `eco_catalog_refresh --catalog subtrees`, the ops API's POST refreshes).

All or nothing, like the other catalogs: the new subtrees replace the stored ones in one
transaction only when every site and every record batch answered; a failed site, a failed
GraphQL batch, or a stale answer leaves the previous subtrees served, and the error goes to the
state's `last_error` and the refresh log. REST reads skip the answer cache (`fresh=True`), as in
catalog.services.refresh. Progress (sites done of sites to walk) is written to the state row
after every site, for the admin and eco_ping, and logged (stderr) about every tenth of the sites.

One run at a time: a run holds the `subtrees` run lock (catalog.services.run_lock: a PostgreSQL
advisory lock on a session of its own, or a file lock beside SQLite) from its claim to its end;
a run that finds it held is skipped and says how far the holder got. The lock dies with its
process, so a run killed -9 (which leaves `progress_at` set: nothing could clear it) holds up
nobody: the next run takes the free lock and overwrites that progress (catalog.status
marks such a progress failed once it finds the lock free).

The shared rate budget: every request goes through the upstream client, so through the
process-shared (Redis) bucket that interactive calls use too. On top of that the walk keeps out
of their way: while NEON's last `x-ratelimit-remaining` is below `RESERVE` of its limit, it
waits between sites so that it spends at most `SHARE` of the budget's refill rate (anonymous:
about one site a second; with a token four). Sites are walked one at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

import catalog.services.run_lock as run_lock
import catalog.services.swap as swap
from catalog.models import SUBTREES, CatalogState, LocationNodeRow, LocationRow
from catalog.services.refresh import RefreshOutcome, _describe
from eco_core.errors import EcoError
from eco_core.memory import release_freed
from upstream import models as m
from upstream.context import call_scope
from upstream.protocol import CatalogUpstream

log = logging.getLogger("eco.catalog.subtrees")

RECORD_BATCH = 1000  # NEON's findLocations limit per query
RESERVE = 0.5
SHARE = 0.5
SOURCE = "rest+gql"
# The plain record of each node. Variables keep the names out of the query text.
RECORDS_QUERY = (
    "query EcoLocationRecords($names: [String!]!) { findLocations(query: {locationNames: $names}) { "
    "locationName locationDescription locationType domainCode siteCode locationDecimalLatitude "
    "locationDecimalLongitude locationElevation locationUtmEasting locationUtmNorthing locationUtmHemisphere "
    "locationUtmZone alphaOrientation betaOrientation gammaOrientation xOffset yOffset zOffset "
    "offsetLocation { locationName } locationPolygon { coordinates { latitude longitude elevation } } "
    "activePeriods { activatedDate deactivatedDate } locationProperties { locationPropertyName "
    "locationPropertyValue } locationParent locationParentUrl } }"
)
# Tree fields: the stored tree holds them, the record must not repeat (or contradict) it.
TREE_FIELDS = {"location_children", "location_children_urls", "location_parent_hierarchy",
               "location_child_hierarchy", "location_history"}

Node = tuple[str, str, str, str, int]  # name, type, description, parent, depth


class _Records(m.NeonModel):
    find_locations: list[m.Location]


def pause_before_next(info: dict[str, Any] | None) -> float:
    """Seconds to wait before the next site: none while NEON says at least RESERVE of its limit
    remains (or says nothing), else the pace that spends SHARE of our refill rate."""
    if not info:
        return 0.0
    remaining, limit, rate = info.get("remaining"), info.get("limit"), info.get("budgetPerSecond")
    if remaining is None or not limit or not rate or remaining >= limit * RESERVE:
        return 0.0
    return 1.0 / (float(rate) * SHARE)


def _flatten(tree: m.Location, domain: str) -> list[Node]:
    """The site and every node below it, pre-order (the upstream's order), depth from the site."""
    out: list[Node] = [(tree.location_name, tree.location_type or "", tree.location_description or "",
                        tree.location_parent or domain, 0)]

    def walk(children: list[m.ChildHierarchy], parent: str, depth: int) -> None:
        for c in children:
            out.append((c.location_name, c.location_type or "", c.location_description or "", parent, depth))
            walk(c.location_child_hierarchy, c.location_name, depth + 1)

    walk(tree.location_child_hierarchy or [], tree.location_name, 1)
    return out


def _batches(names: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(names), RECORD_BATCH):
        yield names[i:i + RECORD_BATCH]


# -- state (sync: the ORM) ---------------------------------------------------------------------

def _sites() -> list[tuple[str, str]]:
    """(site, domain) of every SITE row of the locations catalog, sorted."""
    return sorted(LocationRow.objects.filter(location_type="SITE").values_list("name", "domain_code"))


def _claim(total: int) -> tuple[run_lock.RunLock | None, str | None]:
    """Take the run lock and mark the run as started: (the lock, None); or, when a live run
    holds the lock, (None, that run's progress). A dead run's progress is overwritten."""
    lock = run_lock.try_hold(SUBTREES)
    if lock is None:
        state = CatalogState.objects.filter(catalog=SUBTREES).first()
        return None, f"{state.progress_done}/{state.progress_total}" if state else "?"
    try:
        with transaction.atomic():
            CatalogState.objects.get_or_create(catalog=SUBTREES)
            CatalogState.objects.filter(catalog=SUBTREES).update(progress_done=0, progress_total=total,
                                                                 progress_at=datetime.now(UTC))
    except BaseException:
        lock.release()
        raise
    return lock, None


def _progress(done: int) -> None:
    CatalogState.objects.filter(catalog=SUBTREES).update(progress_done=done, progress_at=datetime.now(UTC))


def _finish() -> None:
    CatalogState.objects.filter(catalog=SUBTREES).update(progress_at=None)


# -- the refresh ---------------------------------------------------------------------------------

async def _records(client: CatalogUpstream, names: list[str]) -> dict[str, dict[str, Any]]:
    reply = await client.graphql(RECORDS_QUERY, {"names": names}, model=_Records, kind="catalog")
    return {r.location_name: r.model_dump(mode="json", by_alias=True, exclude=TREE_FIELDS, exclude_none=True)
            for r in reply.find_locations}


def _rows(nodes: list[tuple[str, Node]], records: dict[str, dict[str, Any]]) -> list[LocationNodeRow]:
    rows: list[LocationNodeRow] = []
    seq: dict[str, int] = {}
    seen: set[str] = set()
    for site, (name, ltype, desc, parent, depth) in nodes:
        if name in seen:
            # A name is unique in NEON's namespace; a tree that repeats one keeps its first place.
            log.warning("location %s appears twice in the subtrees; the first is kept", name)
            continue
        seen.add(name)
        rec = records.get(name)
        n = seq[site] = seq.get(site, -1) + 1
        rows.append(LocationNodeRow(
            name=name, site_code=site, seq=n, depth=depth, parent=parent, location_type=ltype, description=desc,
            latitude=rec.get("locationDecimalLatitude") if rec else None,
            longitude=rec.get("locationDecimalLongitude") if rec else None,
            elevation=rec.get("locationElevation") if rec else None, record=rec))
    return rows


async def _walk(client: CatalogUpstream, sites: list[tuple[str, str]],
                sleep: Callable[[float], Awaitable[None]]) -> list[LocationNodeRow]:
    nodes: list[tuple[str, Node]] = []
    records: dict[str, dict[str, Any]] = {}
    pending: list[str] = []
    info = getattr(client, "rate_limit_info", None)  # the real client's view of NEON's headers
    for done, (site, domain) in enumerate(sites, start=1):
        pause = pause_before_next(info() if callable(info) else None)
        if pause:
            await sleep(pause)
        tree = await client.location(site, hierarchy=True, fresh=True)
        found = _flatten(tree, domain)
        nodes.extend((site, n) for n in found)
        pending.extend(n[0] for n in found)
        while len(pending) >= RECORD_BATCH:
            records.update(await _records(client, pending[:RECORD_BATCH]))
            pending = pending[RECORD_BATCH:]
        await sync_to_async(_progress)(done)
        if done == len(sites) or done * 10 // len(sites) != (done - 1) * 10 // len(sites):
            log.info("subtrees: %d/%d sites walked, %d nodes", done, len(sites), len(nodes))
    for batch in _batches(pending):
        records.update(await _records(client, batch))
    return _rows(nodes, records)


async def refresh_location_subtrees(*, client: CatalogUpstream, trigger: str = "manual",
                                    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> RefreshOutcome:
    """Walk every site and swap the subtrees in; never raises for upstream trouble (see the outcome)."""
    started, t0 = datetime.now(UTC), time.perf_counter()
    sites = await sync_to_async(_sites)()
    lock, running = await sync_to_async(_claim)(len(sites))
    if lock is None:
        # Not a failure of the catalog: the run under way will report. Nothing is recorded.
        log.info("subtree refresh (%s) skipped: another one is under way (%s sites)", trigger, running)
        return RefreshOutcome(SUBTREES, False, None, 0, 0, time.perf_counter() - t0,
                              error=f"skipped: another subtree refresh is under way ({running} sites)")
    try:
        outcome = await _run(client, sites, trigger, started, t0, sleep)
    finally:
        try:
            # Also on cancellation (a server shutting down): the progress must not read as running.
            await sync_to_async(_finish)()
        finally:
            lock.release()
    await sync_to_async(swap.close_connection)()
    release_freed()
    return outcome


async def _run(client: CatalogUpstream, sites: list[tuple[str, str]], trigger: str, started: datetime,
               t0: float, sleep: Callable[[float], Awaitable[None]]) -> RefreshOutcome:
    log.info("subtree refresh (%s): walking %d sites", trigger, len(sites))
    with call_scope() as acct:
        try:
            if not sites:
                raise EcoError("catalog_unavailable", "the locations catalog has not been built yet "
                               "(the subtree refresh walks its SITE rows)")
            rows = await _walk(client, sites, sleep)
            if acct.stale_served:
                raise EcoError("upstream_unavailable", "the upstream gave no fresh location answers (it failed "
                               "or did not answer); only stale cached ones were available")
            # The client's own addresses: the rows came from where it sent.
            version = await sync_to_async(swap.swap_catalog)(
                SUBTREES, [(LocationNodeRow, list(rows))], source=SOURCE, row_count=len(rows),
                rest_base=client.base_url, graphql_url=client.graphql_url)
        except Exception as exc:
            error = _describe(exc)
            log.warning("subtree refresh failed (%s); the previous subtrees are kept", error)
            await sync_to_async(swap.record_failure)(SUBTREES, error)
            await sync_to_async(swap.log_refresh)(catalog=SUBTREES, source=SOURCE, trigger=trigger,
                                                  started_at=started, ok=False, rows=0, requests=acct.requests,
                                                  error=error)
            return RefreshOutcome(SUBTREES, False, SOURCE, 0, acct.requests, time.perf_counter() - t0, None, error)
    await sync_to_async(swap.log_refresh)(catalog=SUBTREES, source=SOURCE, trigger=trigger, started_at=started,
                                          ok=True, rows=len(rows), requests=acct.requests)
    log.info("subtrees: %d sites, %d nodes, %d requests, %.1fs", len(sites), len(rows), acct.requests,
             time.perf_counter() - t0)
    return RefreshOutcome(SUBTREES, True, SOURCE, len(rows), acct.requests, time.perf_counter() - t0, version)
