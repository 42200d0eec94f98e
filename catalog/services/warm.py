"""When catalogs are built or refreshed without being asked: at start-up, on first use, ahead of expiry.

    await prewarm(cfg, *, client=None) -> [RefreshOutcome]
        refresh the catalogs that are missing or older than their TTL; never raises (HTTP start)
    await ensure_catalogs(cfg, *, client=None, need=("products", "sites"))
        for a catalog-backed tool: builds missing catalogs first (waits; catalog_unavailable if
        that fails), then starts a refresh-ahead in the background if one is due; a caller that
        already has a catalog never waits
    due_catalogs(cfg, *, ahead=0.0, missing_only=False) -> [catalog]   (sync; the index's cached state)
    await refresh_subtrees_ahead(cfg, *, client=None, prewarm=False) -> Task | None
        starts a background subtree refresh (catalog.services.location_subtrees) when one is due;
        never waits for it
    subtrees_due(cfg, *, ahead=0.0, missing_too=False) -> bool          (sync; one query)

A catalog built from another upstream than the configured one (catalog.status.upstream_mismatch)
counts as missing everywhere here: it is rebuilt before any tool reads it, and when that fails
the tool answers catalog_unavailable saying which upstream it came from and which one failed.

Refresh-ahead: with no Celery broker, a catalog inside the last `cache.refresh_ahead` fraction of
its TTL is refreshed in the background of the process that notices it (one at a time). With a
broker, Celery beat owns the schedule and nothing runs here. A catalog whose background refresh
failed is not tried again by this process for `RETRY_AFTER_FAILURE_S`: refreshes read the
upstream, never the cache, so during an outage every tool call would otherwise start another
failing refresh as soon as the last one ended.

The location subtrees (every site's subtree, ~85 requests; not one of CATALOGS) get the same
treatment without a broker, in a background task of their own, one at a time per process and one
at a time across processes (the walk's run lock). They are walked
  - after the catalogs at HTTP start (`prewarm=True`, called by the gateway's prewarm, which runs
    only with `cache.prewarm`: on by default on HTTP, off on stdio, so a stdio start never adds
    the walk's requests unless asked), when they are missing, built from another upstream, or
    older than `cache.ttl_s.locations`;
  - ahead of expiry, like the catalogs: stored subtrees inside the last `cache.refresh_ahead` of
    their TTL, noticed by a location or catalog tool call (checked at most every
    SUBTREES_CHECK_S, so a call pays no database read for it in between). Missing ones are built
    here only in a process that prewarmed (its start-up walk may have failed) or, on stdio (which
    has no start-up prewarm), when `cache.prewarm` is set; elsewhere a missing walk is the
    operator's (eco_catalog_refresh --catalog subtrees, the admin, the ops API).
A failed walk is not started again by this process for RETRY_AFTER_FAILURE_S.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.conf import settings

from catalog.models import CATALOGS, SUBTREES, CatalogState
from catalog.services.location_subtrees import SOURCE as SUBTREES_SOURCE
from catalog.services.location_subtrees import refresh_location_subtrees
from catalog.services.refresh import RefreshOutcome, refresh_catalogs
from catalog.status import ttl_for, upstream_mismatch
from eco_core.config import EcoConfig, get_config
from eco_core.errors import EcoError
from upstream import context
from upstream.mapping import failure_hint, host_of, unreachable_hint
from upstream.protocol import CatalogUpstream

log = logging.getLogger("eco.catalog")

_background: asyncio.Task[list[RefreshOutcome]] | None = None
RETRY_AFTER_FAILURE_S = 60.0
_failed_at: dict[str, float] = {}  # catalog -> time.monotonic() of its last failed refresh-ahead
_subtrees: asyncio.Task[RefreshOutcome] | None = None
_subtrees_wanted = False  # this process prewarmed: it also builds missing subtrees
_subtrees_checked_at = -float("inf")  # time.monotonic() of the last due check
SUBTREES_CHECK_S = 60.0
# One first-use build at a time per event loop: callers arriving while a missing catalog is
# being built wait for that build instead of starting one each (a burst after start-up did).
_first_use: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _first_use_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    lock = _first_use.get(loop)
    if lock is None:
        lock = _first_use[loop] = asyncio.Lock()
    return lock


def _client(client: CatalogUpstream | None) -> CatalogUpstream:
    if client is not None:
        return client
    from upstream.client import get_client

    return get_client()


def due_catalogs(cfg: EcoConfig | None = None, *, ahead: float = 0.0, missing_only: bool = False) -> list[str]:
    """Catalogs missing, or older than (1 - ahead) of their TTL. Uses the index's cached
    catalog state, so calling it per tool call costs no query."""
    from catalog.index import get_index

    cfg = cfg or get_config()
    info = get_index().info
    now = datetime.now(UTC)
    due = []
    for c in CATALOGS:
        i = info.get(c)
        if i is None or i.refreshed_at is None or i.row_count == 0:
            due.append(c)
        elif upstream_mismatch(i.rest_base, i.graphql_url, cfg):
            due.append(c)  # built from another upstream: never served, so as good as missing
        elif not missing_only and (now - i.refreshed_at).total_seconds() >= ttl_for(c, cfg) * (1.0 - ahead):
            due.append(c)
    return due


async def prewarm(cfg: EcoConfig | None = None, *, client: CatalogUpstream | None = None) -> list[RefreshOutcome]:
    cfg = cfg or get_config()
    try:
        due = await sync_to_async(due_catalogs)(cfg)
        if not due:
            return []
        outcomes = await refresh_catalogs(due, client=_client(client), trigger="prewarm", cfg=cfg)
        for o in outcomes:
            log.info("prewarm %s: %s from %s, %d rows, %d requests, %.2fs%s", o.catalog, "ok" if o.ok else "FAILED",
                     o.source, o.rows, o.requests, o.seconds, f" ({o.error})" if o.error else "")
        return outcomes
    except Exception:
        log.exception("catalog prewarm failed; catalogs will be built on first use")
        return []


async def ensure_catalogs(cfg: EcoConfig | None = None, *, client: CatalogUpstream | None = None,
                          need: tuple[str, ...] = ("products", "sites")) -> None:
    global _background
    cfg = cfg or get_config()
    missing = [c for c in await sync_to_async(due_catalogs)(cfg, missing_only=True) if c in need]
    if missing:
        async with _first_use_lock():
            await _build_missing(cfg, client, need)
    await refresh_subtrees_ahead(cfg, client=client)
    if settings.CELERY_BROKER_URL or (_background is not None and not _background.done()):
        return
    due = await sync_to_async(due_catalogs)(cfg, ahead=cfg.cache.refresh_ahead)
    now = time.monotonic()
    due = [c for c in due if now - _failed_at.get(c, -RETRY_AFTER_FAILURE_S) >= RETRY_AFTER_FAILURE_S]
    if due:
        _background = asyncio.get_running_loop().create_task(_refresh_ahead(due, client=_client(client), cfg=cfg))


async def _build_missing(cfg: EcoConfig, client: CatalogUpstream | None, need: tuple[str, ...]) -> None:
    """Build the catalogs of `need` still missing once this caller holds the first-use lock
    (a caller that waited finds them built and returns at once)."""
    missing = [c for c in await sync_to_async(due_catalogs)(cfg, missing_only=True) if c in need]
    if not missing:
        return
    mismatched = await sync_to_async(_mismatches)(cfg, missing)
    outcomes = await refresh_catalogs(missing, client=_client(client), trigger="first-use", cfg=cfg)
    # The refresh counts in its own scope; the caller who waited for it paid these requests.
    acct = context.current()
    if acct is not None:
        acct.requests += sum(o.requests for o in outcomes)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        name = failed[0].catalog
        why = mismatched.get(name)
        message = (f"the {name} catalog is not served: it was {why}, and rebuilding it from there failed"
                   if why else f"the {name} catalog could not be built")
        details = {"cause": failed[0].error, "catalog": name, "upstream": cfg.eco.base_url}
        if why:
            details["upstreamMismatch"] = why
        host = host_of(cfg.eco.base_url)
        raise EcoError("catalog_unavailable", message, details=details,
                       hint=unreachable_hint(host) if why else failure_hint(host, failed[0].error))


def _mismatches(cfg: EcoConfig, catalogs: list[str]) -> dict[str, str]:
    """Why each of `catalogs` built from another upstream is not served (absent: never built)."""
    from catalog.index import get_index

    info = get_index().info
    out = {}
    for c in catalogs:
        i = info.get(c)
        why = upstream_mismatch(i.rest_base, i.graphql_url, cfg) if i is not None and i.row_count else None
        if why:
            out[c] = why
    return out


async def _refresh_ahead(due: list[str], *, client: CatalogUpstream, cfg: EcoConfig) -> list[RefreshOutcome]:
    outcomes = await refresh_catalogs(due, client=client, trigger="refresh-ahead", cfg=cfg)
    for o in outcomes:
        if o.ok:
            _failed_at.pop(o.catalog, None)
        else:
            _failed_at[o.catalog] = time.monotonic()
    return outcomes


# -- the location subtrees -------------------------------------------------------------------------

def subtrees_due(cfg: EcoConfig | None = None, *, ahead: float = 0.0, missing_too: bool = False) -> bool:
    """Whether the subtrees should be walked now: stored ones older than (1 - ahead) of their TTL,
    or (`missing_too`) none stored for the configured upstream. Never before the locations catalog
    (its SITE rows are what the walk walks) is served. One small query (not the index's cached
    state: a process that only answers location tools need never build the search index)."""
    cfg = cfg or get_config()
    info = {s.catalog: s for s in CatalogState.objects.filter(catalog__in=("locations", SUBTREES))}
    loc = info.get("locations")
    if loc is None or not loc.row_count or upstream_mismatch(loc.rest_base, loc.graphql_url, cfg):
        return False
    sub = info.get(SUBTREES)
    if (sub is None or sub.refreshed_at is None or not sub.row_count
            or upstream_mismatch(sub.rest_base, sub.graphql_url, cfg)):
        return missing_too
    age = (datetime.now(UTC) - sub.refreshed_at).total_seconds()
    return age >= ttl_for(SUBTREES, cfg) * (1.0 - ahead)


async def refresh_subtrees_ahead(cfg: EcoConfig | None = None, *, client: CatalogUpstream | None = None,
                                 prewarm: bool = False) -> asyncio.Task[RefreshOutcome] | None:
    """Start a background subtree refresh when one is due and none runs in this process; returns
    its task (or None) at once. `prewarm`: the start-up walk (see the module docstring)."""
    global _subtrees, _subtrees_wanted, _subtrees_checked_at
    cfg = cfg or get_config()
    _subtrees_wanted = _subtrees_wanted or prewarm
    if settings.CELERY_BROKER_URL or (_subtrees is not None and not _subtrees.done()):
        return None
    now = time.monotonic()
    if not prewarm and now - _subtrees_checked_at < SUBTREES_CHECK_S:
        return None
    if now - _failed_at.get(SUBTREES, -RETRY_AFTER_FAILURE_S) < RETRY_AFTER_FAILURE_S:
        return None
    _subtrees_checked_at = now
    ahead = 0.0 if prewarm else cfg.cache.refresh_ahead
    # stdio has no start-up prewarm: with prewarm set there, the first tool call starts the walk.
    missing_too = _subtrees_wanted or (cfg.prewarm and not cfg.is_http)
    try:
        due = await sync_to_async(subtrees_due)(cfg, ahead=ahead, missing_too=missing_too)
    except Exception:
        # Background upkeep: a tool call that noticed it must not fail because of it.
        log.warning("subtree refresh-ahead: could not read the subtrees' state", exc_info=True)
        return None
    if not due:
        return None
    trigger = "prewarm" if prewarm else "refresh-ahead"
    _subtrees = asyncio.get_running_loop().create_task(_walk_subtrees(_client(client), trigger),
                                                       name="eco-subtrees-refresh")
    return _subtrees


async def _walk_subtrees(client: CatalogUpstream, trigger: str) -> RefreshOutcome:
    try:
        outcome = await refresh_location_subtrees(client=client, trigger=trigger)
    except Exception as exc:
        # Not an upstream failure (those come back as outcomes): the database, most likely. Said
        # here, since nobody awaits this task to see it raised.
        log.exception("subtree refresh (%s) failed", trigger)
        _failed_at[SUBTREES] = time.monotonic()
        return RefreshOutcome(SUBTREES, False, SUBTREES_SOURCE, 0, 0, 0.0, error=f"{type(exc).__name__}: {exc}")
    if outcome.ok:
        _failed_at.pop(SUBTREES, None)
    elif outcome.source is not None:  # a walk that failed, not one skipped for another under way
        _failed_at[SUBTREES] = time.monotonic()
    log.info("subtree refresh (%s): %s, %d nodes, %d requests, %.1fs%s", trigger, "ok" if outcome.ok else "FAILED",
             outcome.rows, outcome.requests, outcome.seconds, f" ({outcome.error})" if outcome.error else "")
    return outcome
