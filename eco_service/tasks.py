"""Celery tasks of the composition root (found by the Celery app's autodiscovery), and the
state of refreshes queued through the ops API (eco_service.ops_api): kept in Django's cache for
a day, so the web process that queued one and the worker that runs it must share that cache
(REDIS_URL) when Celery is used.

`first_subtree_walk` is queued by each worker as it starts (eco_service.celery): with a broker
nothing walks the location subtrees but beat, whose first run is `cache.ttl_s.locations` (6 h)
away, so a new deployment (or one moved to another upstream) would answer location calls without
them until then. It walks them when they are missing, built from another upstream or past their
TTL; while the locations catalog it walks is not served yet (the web's start-up build is still
running) it asks again every FIRST_WALK_RETRY_S, FIRST_WALK_TRIES times at most. Several workers
starting together queue one each: the walk's run lock lets one walk, and the others find the
subtrees fresh.

A run holds a run lock of its own (catalog.services.run_lock, named for the refresh) from before
it records "running" until after it records how it ended. The lock dies with its process, so a
state read as "running" while its lock is free was left by a run that was killed or crashed: it
is recorded as failed then and there, instead of reading "running" for the rest of the day."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from celery import shared_task
from django.core.cache import cache

log = logging.getLogger("eco.ops")

OPS_REFRESH_TASK = "eco_service.ops_refresh"
FIRST_WALK_TASK = "eco_service.first_subtree_walk"
FIRST_WALK_RETRY_S = 30
FIRST_WALK_TRIES = 40
STATE_TTL_S = 86400
STATE_KEY = "eco:ops:refresh:{}"
RUN_LOCK = "ops-refresh-{}"
DIED = "the process running this refresh ended before it finished (killed or crashed)"


def now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def save_state(state: dict[str, Any]) -> None:
    cache.set(STATE_KEY.format(state["id"]), state, STATE_TTL_S)


def load_state(request_id: str) -> dict[str, Any] | None:
    state = cache.get(STATE_KEY.format(request_id))
    if state is not None and state.get("state") == "running" and not _run_alive(request_id):
        # Read again now the lock is seen free: a run records its end before letting go of it.
        state = cache.get(STATE_KEY.format(request_id))
        if state is not None and state.get("state") == "running":
            log.warning("ops refresh %s: its run ended without finishing; recorded as failed", request_id)
            state = {**state, "state": "failed", "finishedAt": now_iso(), "error": DIED}
            save_state(state)
    return state


def _run_alive(request_id: str) -> bool:
    from django.db import DatabaseError

    from catalog.services.run_lock import held

    try:
        return held(RUN_LOCK.format(request_id))
    except DatabaseError:
        return True  # cannot tell while the database is away: the state stays as recorded


def run_refresh(request_id: str) -> None:
    """Run a queued refresh and record its state (a Celery worker or this process's thread): the
    named catalogs first, then the location subtrees when named (they walk the locations
    catalog's SITE rows, so after a locations refresh asked for in the same request)."""
    from django.db import DatabaseError

    from catalog.services.run_lock import try_hold

    state = load_state(request_id)
    if state is None:
        log.warning("ops refresh %s: no state recorded (expired or another cache); not run", request_id)
        return
    try:
        lock = try_hold(RUN_LOCK.format(request_id), transient=True)
    except DatabaseError as exc:
        log.warning("ops refresh %s: the database is unavailable (%s); not run", request_id, type(exc).__name__)
        save_state({**state, "state": "failed", "finishedAt": now_iso(), "error": type(exc).__name__})
        return
    if lock is None:
        log.warning("ops refresh %s is already being run by another process; not run twice", request_id)
        return
    try:
        _run(request_id, state)
    finally:
        lock.release()


def _run(request_id: str, state: dict[str, Any]) -> None:
    from catalog.models import SUBTREES
    from catalog.tasks import refresh_catalogs_task, refresh_location_subtrees_task

    save_state({**state, "state": "running"})
    catalogs = [c for c in state["catalogs"] if c != SUBTREES]
    try:
        # Called, not queued: this already is the worker (or the in-process thread). An empty
        # list must not reach the task, which reads it as "every catalog".
        outcomes = refresh_catalogs_task(catalogs=catalogs, source=state["source"], trigger="ops") if catalogs else []
        if SUBTREES in state["catalogs"]:
            outcomes.append(refresh_location_subtrees_task(trigger="ops"))
    except Exception as exc:
        log.exception("ops refresh %s failed", request_id)
        save_state({**state, "state": "failed", "finishedAt": now_iso(), "error": type(exc).__name__})
        return
    ok = all(o.get("ok") for o in outcomes)
    save_state({**state, "state": "succeeded" if ok else "failed", "finishedAt": now_iso(), "outcomes": outcomes,
                "error": None if ok else "; ".join(f"{o['catalog']}: {o.get('error')}" for o in outcomes
                                                   if not o.get("ok"))})


@shared_task(name=OPS_REFRESH_TASK)
def ops_refresh_task(request_id: str) -> None:
    """A refresh queued through the ops API; its state is kept where the API reads it."""
    run_refresh(request_id)


def first_walk_verdict() -> str:
    """"walk" (the subtrees are missing, from another upstream or past their TTL), "wait" (the
    locations catalog is not served yet: nothing to walk) or "fresh"."""
    from catalog.models import CatalogState
    from catalog.services.warm import subtrees_due
    from catalog.status import upstream_mismatch
    from eco_core.config import get_config

    cfg = get_config()
    loc = CatalogState.objects.filter(catalog="locations").first()
    if loc is None or not loc.row_count or upstream_mismatch(loc.rest_base, loc.graphql_url, cfg):
        return "wait"
    return "walk" if subtrees_due(cfg, missing_too=True) else "fresh"


@shared_task(name=FIRST_WALK_TASK, bind=True, max_retries=FIRST_WALK_TRIES - 1)
def first_subtree_walk_task(self: Any) -> dict[str, Any]:
    """The subtree walk a worker queues as it starts; see the module docstring."""
    from catalog.tasks import refresh_location_subtrees_task

    verdict = first_walk_verdict()
    if verdict == "fresh":
        log.info("first subtree walk: the stored subtrees are current; beat keeps them so")
        return {"walked": False, "why": "fresh"}
    if verdict == "wait":
        if self.request.retries >= FIRST_WALK_TRIES - 1:
            log.warning("first subtree walk: no locations catalog after %d checks; left to beat and to "
                        "eco_catalog_refresh --catalog subtrees", FIRST_WALK_TRIES)
            return {"walked": False, "why": "no locations catalog"}
        log.info("first subtree walk: waiting for the locations catalog; next check in %d s", FIRST_WALK_RETRY_S)
        raise self.retry(countdown=FIRST_WALK_RETRY_S)
    # Called, not queued: this already is the worker.
    return {"walked": True, **refresh_location_subtrees_task(trigger="start")}
