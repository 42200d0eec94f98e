"""How warm and how fresh the catalogs are: for eco_ping's `catalog`, /readyz and the admin.

    catalog_status() -> {"products": {"count", "ageSeconds", "source", "refreshedAt", "stale",
                                      "lastError", "restBase", "graphqlUrl", "upstreamMismatch"},
                         "sites": ..., "releases": ..., "locations": ...,
                         "subtrees": {... the same, "sitesDone", "sitesTotal", "refreshing"},
                         "ready": bool, "degraded": bool}
    readiness() -> (False, {"status": "warming", ["upstreamMismatch": {name: why}]})
                        until products and sites exist, built from the configured upstream
                 | (True, {"status": "ready", "catalogs": {name: {"ageSeconds", "rows", "restBase",
                           "graphqlUrl", "upstreamMismatch"}}, "degraded": bool, "tokenConfigured": bool,
                           "subtrees": {"ageSeconds", "rows", "stale", "refreshing", "sitesDone",
                                        "sitesTotal", "lastError", "upstreamMismatch"}})
                   `catalogs` is what readiness requires (the four catalogs); `subtrees` (every
                   site's stored location subtree) is said for information and never holds it up
    upstream_mismatch(rest_base, graphql_url, cfg) -> why | None

A catalog is served only for the upstream it was built from: `upstreamMismatch` (null when they
agree) says why one is not, and such a catalog counts as missing for readiness and for
catalog.services.warm, which rebuilds it before a tool reads it.

Both are synchronous and read the database (one small query): from async code call them
through `asgiref.sync.sync_to_async`, or read `await status_report(cfg)`: catalog_status as
eco_ping and /metrics read it, at most once a second, with the database's outage reported in it.

`degraded` is true when the GraphQL breaker is open (catalogs come from REST) or when the last
refresh attempt of a catalog failed (the previous catalog is still served).

A subtree walk is "refreshing" while its run lock (catalog.services.run_lock) is held. A progress
claim found with the lock free was left by a walk that died (kill -9 cannot clear it): it is
marked failed there and then (claim cleared, the error recorded), so it never reads as running.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from anyio import to_thread
from django import db

from catalog import index
from catalog.models import CATALOGS, SUBTREES, CatalogState
from catalog.outage import DATABASE_DOWN
from eco_core.config import EcoConfig, get_config
from eco_core.memo import memos

log = logging.getLogger("eco.catalog")

READY_NEEDS = ("products", "sites")
INTERRUPTED = "interrupted: the process running the subtree refresh ended before it finished (killed or crashed)"


def ttl_for(catalog: str, cfg: EcoConfig) -> int:
    ttl = cfg.cache.ttl_s
    return {"releases": ttl.releases, "locations": ttl.locations, SUBTREES: ttl.locations}.get(catalog, ttl.catalog)


def _graphql_breaker_open() -> bool:
    from upstream.client import graphql_breaker_state

    return graphql_breaker_state().get("state") == "open"


def _same(a: str, b: str) -> bool:
    return a.rstrip("/").lower() == b.rstrip("/").lower()


def upstream_mismatch(rest_base: str, graphql_url: str, cfg: EcoConfig) -> str | None:
    """Why a catalog built from `rest_base` and `graphql_url` must not be served under `cfg`,
    or None when it may be. Both addresses must agree: products and sites may come from either."""
    if not rest_base and not graphql_url:
        return f"built before catalogs recorded their upstream; the service now uses {cfg.eco.base_url}"
    if _same(rest_base, cfg.eco.base_url) and _same(graphql_url, cfg.eco.graphql_url):
        return None
    return (f"built from {rest_base} (GraphQL {graphql_url}); the service now uses {cfg.eco.base_url} "
            f"(GraphQL {cfg.eco.graphql_url})")


def _entry(state: CatalogState | None, catalog: str, cfg: EcoConfig, now: datetime) -> dict[str, Any]:
    if state is None or state.refreshed_at is None:
        return {"count": 0, "ageSeconds": None, "source": None, "refreshedAt": None, "stale": True,
                "lastError": state.last_error or None if state else None, "restBase": None, "graphqlUrl": None,
                "upstreamMismatch": None}
    age = int((now - state.refreshed_at).total_seconds())
    return {
        "count": state.row_count,
        "ageSeconds": max(age, 0),
        "source": state.source or None,
        "refreshedAt": state.refreshed_at.isoformat().replace("+00:00", "Z"),
        "stale": age > ttl_for(catalog, cfg),
        "lastError": state.last_error or None,
        "restBase": state.rest_base or None,
        "graphqlUrl": state.graphql_url or None,
        "upstreamMismatch": upstream_mismatch(state.rest_base, state.graphql_url, cfg),
    }


def catalog_status(cfg: EcoConfig | None = None) -> dict[str, Any]:
    cfg = cfg or get_config()
    now = datetime.now(UTC)
    states = {s.catalog: s for s in CatalogState.objects.all()}
    out: dict[str, Any] = {c: _entry(states.get(c), c, cfg, now) for c in CATALOGS}
    # The stored site subtrees (catalog.services.location_subtrees): freshness, and the progress of
    # their long walk. Not needed for readiness: the location tools fall back to the upstream.
    sub = states.get(SUBTREES)
    moving = bool(sub and sub.progress_at)
    if sub is not None and sub.progress_at is not None and not _walk_alive():
        sub = states[SUBTREES] = _mark_interrupted(sub)
        moving = False
    out[SUBTREES] = {**_entry(sub, SUBTREES, cfg, now), "sitesDone": sub.progress_done if sub else 0,
                     "sitesTotal": sub.progress_total if sub else 0, "refreshing": moving}
    # A catalog from another upstream is not served, so it cannot make the service ready.
    out["ready"] = all(out[c]["count"] > 0 and out[c]["upstreamMismatch"] is None for c in READY_NEEDS)
    out["degraded"] = _graphql_breaker_open() or any(s.last_error for s in states.values())
    return out


def _walk_alive() -> bool:
    # Imported here: catalog.services imports this module.
    from catalog.services.run_lock import held

    return held(SUBTREES)


def _mark_interrupted(state: CatalogState) -> CatalogState:
    """The dead walk's claim cleared and its failure recorded, only if the claim is still the
    one read (a new walk that took the free lock meanwhile has written its own)."""
    CatalogState.objects.filter(catalog=SUBTREES, progress_at=state.progress_at).update(
        progress_at=None, last_error=INTERRUPTED)
    return CatalogState.objects.filter(catalog=SUBTREES).first() or state

# eco_ping would otherwise read the catalog state from the database on every call (a connection
# each time): one read a second serves every ping in between, as the index checks catalog
# versions, and a swap in this process (index.generation) shows at once.
STATUS_TTL_S = 1.0
# The catalog status while the database does not answer: nothing known of the catalogs.
DATABASE_DOWN_STATUS: dict[str, Any] = {"ready": False, "degraded": True, "database": "down"}
# Per configuration: (index generation, monotonic deadline, status).
_reports = memos.by_identity("status.reports", max_entries=4)


async def status_report(cfg: EcoConfig) -> dict[str, Any]:
    """catalog_status with `database` "up", or DATABASE_DOWN_STATUS when the database is
    unreachable: a report, never an error (eco_ping answers through an outage). Either is kept
    STATUS_TTL_S, so calls during an outage do not each wait for a connection to fail."""
    generation = index.generation()
    kept = _reports.get(cfg)
    if kept is not None and kept[0] == generation and time.monotonic() < kept[1]:
        return kept[2]
    was_down = kept is not None and kept[2] is DATABASE_DOWN_STATUS
    try:
        # The ORM stays off the event loop; catalog_status is looked up now, so a test's stand-in serves.
        status = {**await to_thread.run_sync(_closing, catalog_status, cfg), "database": "up"}
    except DATABASE_DOWN as exc:
        if not was_down:  # once an outage, not once a second; the class only, never the driver's message
            log.warning("catalog status: database unavailable (%s)", type(exc).__name__)
        status = DATABASE_DOWN_STATUS
    else:
        if was_down:
            log.info("catalog status: the database answers again")
    _reports.put(cfg, value=(generation, time.monotonic() + STATUS_TTL_S, status))
    return status


def _closing(fn: Callable[[EcoConfig], dict[str, Any]], cfg: EcoConfig) -> dict[str, Any]:
    """`fn(cfg)` in a worker thread of anyio's, whose connections nothing else would close."""
    try:
        return fn(cfg)
    finally:
        db.connections.close_all()


SUBTREES_READYZ = ("ageSeconds", "stale", "refreshing", "sitesDone", "sitesTotal", "lastError",
                   "upstreamMismatch")


def readiness(cfg: EcoConfig | None = None) -> tuple[bool, dict[str, Any]]:
    cfg = cfg or get_config()
    status = catalog_status(cfg)
    if not status["ready"]:
        body: dict[str, Any] = {"status": "warming"}
        mismatched = {c: status[c]["upstreamMismatch"] for c in CATALOGS if status[c]["upstreamMismatch"]}
        if mismatched:
            body["upstreamMismatch"] = mismatched
        return False, body
    body = {
        "status": "ready",
        # Named numbers: a bare {"products": 120} read as 120 products, not 120 seconds.
        "catalogs": {c: {"ageSeconds": status[c]["ageSeconds"], "rows": status[c]["count"],
                         "restBase": status[c]["restBase"], "graphqlUrl": status[c]["graphqlUrl"],
                         "upstreamMismatch": status[c]["upstreamMismatch"]} for c in CATALOGS},
        "degraded": status["degraded"],
        "tokenConfigured": cfg.eco.api_token is not None,
    }
    # Information only, never a condition of readiness: without stored subtrees the location tools
    # fetch a site's subtree upstream (one cached request). (A status without the entry, as tests'
    # stand-ins for catalog_status give, only leaves the key out.)
    sub = status.get(SUBTREES)
    if sub is not None:
        body["subtrees"] = {"rows": sub["count"], **{k: sub[k] for k in SUBTREES_READYZ}}
    return True, body


def upstream_cache_info() -> dict[str, Any]:
    """Entries and hit rate of the upstream answer cache (this process's view; see the client)."""
    from upstream.client import cache_info_all

    return cache_info_all()
