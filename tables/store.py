"""The HTTP deployment's dataset store: stacked datasets built on the server, shared by callers.

    store_root(cfg) -> Path                     tables.store_directory, or the data folder's datasets/
    dataset_key(...) -> str                     selection + every source's name, MD5 and release
    lookup(id) -> Dataset | None                its row; a build whose lease ran out is recorded
                                                 failed, one nobody took within half a lease requeued
    claim(id, ...) -> (Dataset, queued)         one row per dataset: two callers share ONE build;
                                                 refused while the store has no room for it
    dispatch(id) -> note | None                  Celery when a broker is set and reachable, else a
                                                 thread here
    run_build(id)                                the build itself under its lease (the worker, or
                                                 that thread); a second run of it does nothing
    sweep()                                      every build in progress looked at (beat)
    ready_folder(id) -> Path | None              a ready dataset's folder, its last use touched
    evict(cfg, keep) / delete(id)               least-recently-used eviction (sparing datasets in
                                                 use: in_use_s); the ops API's delete

Where the caller's token goes: the web process lists the selection with it (rate limits are the
caller's) and plans the files, caps and hosts checked before any byte. The worker is handed only
the dataset id; the row holds the planned files' signed storage URLs, which need no token. So no
token travels through the broker or lands in the database: who asked is kept as the token's
one-way hash only. A signed URL expires after a while, so a build that fails is restarted by the
next call with the same selection, which lists again and plans fresh URLs.

A dataset's id covers the MD5 of every source: NEON's data is public, so a dataset built for one
caller answers the next caller asking for the same selection of the same files, and a file
re-published upstream makes another dataset (the old one ages out of the store).

On disk: `<store>/<id>/` holds the tables and metadata files (tables.dataset's layout);
`<store>/.sources/<id>/` the source files while it builds (resumable: a retry continues), removed
once it is ready.

One build per dataset, across database and broker restarts: a build runs under a lease on its
row (`lease_owner`, `lease_expires_at`), taken by a conditional UPDATE (only a row nobody holds
can be taken, so a second delivery of the same task, or a second process, does nothing) and
renewed by a heartbeat thread every sixth of `tables.build_lease_s`. A renewal that fails (the
database restarting) is tried again every second; the lease is long enough to ride that out, and
progress writes are best effort meanwhile. A build is dead only once its lease has run out (the
worker was killed): then the next look records it failed. A queued build that no worker has taken
within half a lease (the broker lost its queue, the process that queued it died) is queued again
by the next look at its row or by beat's sweep every 30 s (tables.tasks), so within a minute at
the defaults; a duplicate finds the lease taken.
Clocks: the lease is written by the builder's clock and read by the web's; they share a host or NTP.

The store's cap counts bytes in flight: a build's planned source bytes are reserved from the
moment it is queued until it ends, and a new build is queued only when the ready datasets (less
the least recently used ones it may evict) and the builds in flight leave room for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from django.db import IntegrityError, OperationalError, connection, connections, transaction
from django.db.models import F, Q, Sum

from catalog.outage import DATABASE_DOWN
from eco_core.config import EcoConfig, get_config
from eco_core.errors import EcoError
from tables.layout import DATASET_ID_PATTERN, on_disk
from tables.models import BUILDING, FAILED, READY, Dataset

log = logging.getLogger("eco.tables")

BUILD_TASK = "tables.build_dataset"
SOURCES = ".sources"
DATASET_ID = re.compile(DATASET_ID_PATTERN)
# A failed build is restarted by a call with its selection this many times in all; then the
# failure is the answer until an operator deletes the dataset.
MAX_ATTEMPTS = 3
# Progress is written to the row at most this often (each write is one UPDATE).
PROGRESS_EVERY_S = 1.0
# Files per download batch, as concurrency allows: progress is written between batches.
BATCH_PER_SLOT = 2
DIED = "the worker building this dataset ended before it finished (killed or crashed); call again to retry"
# Lease renewals per lease: a missed one or two (a database restart) leave the lease standing.
LEASE_BEATS = 6
# A renewal or end-of-build write that failed (database away) is tried again this soon.
RETRY_S = 1.0
# A queued build no worker took within this part of a lease is queued again (requeue).
PICKUP_FRACTION = 0.5
# A build no worker has started this long after it was queued was lost (the broker dropped it, or
# the process that queued it died first): recorded failed, so a call with the selection queues it
# again. Long, since a busy worker may be late to a build that is still queued.
QUEUE_WAIT_S = 3600
LOST = "no worker started this build (lost from the queue); call again to retry"


def now() -> datetime:
    return datetime.now(UTC)


def store_root(cfg: EcoConfig) -> Path:
    if cfg.tables.store_directory is not None:
        return cfg.tables.store_directory.expanduser()
    from django.conf import settings

    return Path(settings.DATA_DIR) / "datasets"


def _checked(dataset_id: str) -> str:
    if not DATASET_ID.fullmatch(dataset_id):
        raise ValueError("not a dataset id")
    return dataset_id


def folder_of(cfg: EcoConfig, dataset_id: str) -> Path:
    return store_root(cfg) / _checked(dataset_id)


def sources_of(cfg: EcoConfig, dataset_id: str) -> Path:
    return store_root(cfg) / SOURCES / _checked(dataset_id)


def dataset_key(selection: dict[str, Any], sources: list[tuple[str, str | None, str]], upstream: str) -> str:
    """Product, package and months readable, then a digest of the rest of the selection, the
    upstream and every source file (name, MD5, release)."""
    rest = json.dumps([upstream, {k: v for k, v in sorted(selection.items())}, sorted(sources)], default=str)
    digest = hashlib.sha256(rest.encode()).hexdigest()[:16]
    return (f"{selection['product']}.{selection['package']}.{selection['startMonth']}.{selection['endMonth']}."
            f"{digest}")


# -- rows -------------------------------------------------------------------------------------

T = TypeVar("T")


def _reset_connection() -> None:
    """This thread's connection, dropped after a failed statement: the next one reconnects (a
    connection the server closed, restarting, stays broken otherwise)."""
    with contextlib.suppress(Exception):
        connection.close()


def _busy(exc: BaseException) -> bool:
    return isinstance(exc, OperationalError) and "locked" in str(exc)


def patiently(fn: Callable[[], T], *, patience_s: float, what: str = "") -> T:
    """`fn()`, tried again while the database is away (or SQLite is busy) for up to `patience_s`:
    a restart of the database, or another writer, is a wait, not a failure."""
    deadline = time.monotonic() + patience_s
    delay = 0.05
    while True:
        try:
            return fn()
        except DATABASE_DOWN as exc:
            if time.monotonic() + delay > deadline:
                raise
            if not _busy(exc):
                log.warning("dataset store: %s failed (%s); trying again", what or "a write", type(exc).__name__)
                _reset_connection()
            time.sleep(delay)
            delay = min(delay * 2, RETRY_S)


def pickup_s() -> float:
    """How long a queued build may wait for a worker before it is queued again: half a lease, so
    with beat's sweep every 30 s a lost build is queued again within a minute at the defaults."""
    return float(get_config().tables.build_lease_s) * PICKUP_FRACTION


def lookup(dataset_id: str) -> Dataset | None:
    """The dataset's row. A build whose lease ran out (its worker died) is recorded failed; one no
    worker took within half a lease is queued again (requeue), and after QUEUE_WAIT_S recorded lost."""
    row = Dataset.objects.filter(dataset_id=dataset_id).first()
    if row is None or row.state != BUILDING:
        return row
    stamp = now()
    if row.lease_expires_at is not None:
        if row.lease_expires_at < stamp:
            # Conditional on the lease read: a renewal since then keeps the build.
            n = Dataset.objects.filter(pk=row.pk, state=BUILDING, lease_owner=row.lease_owner,
                                       lease_expires_at=row.lease_expires_at).update(
                state=FAILED, finished_at=stamp, error={"code": "internal_error", "message": DIED, "retryable": True})
            if n:
                log.warning("dataset %s: its build's lease ran out (held by %s); recorded as failed", dataset_id,
                            row.lease_owner)
            row.refresh_from_db()
        return row
    if row.queued_at is not None and (stamp - row.queued_at).total_seconds() > QUEUE_WAIT_S:
        n = Dataset.objects.filter(pk=row.pk, state=BUILDING, lease_expires_at=None, queued_at=row.queued_at).update(
            state=FAILED, finished_at=stamp, error={"code": "internal_error", "message": LOST, "retryable": True})
        if n:
            log.warning("dataset %s: no worker started its build; recorded as failed", dataset_id)
        row.refresh_from_db()
    elif requeue(row, stamp):
        row.refresh_from_db()
    return row


def requeue(row: Dataset, stamp: datetime | None = None) -> bool:
    """Queue again a build no worker has taken within pickup_s of being queued (or requeued): the
    broker may have lost it. Conditional on the last queueing read, so one caller requeues it."""
    stamp = stamp or now()
    last = row.requeued_at or row.queued_at
    if last is None or (stamp - last).total_seconds() <= pickup_s():
        return False
    n = Dataset.objects.filter(pk=row.pk, state=BUILDING, lease_expires_at=None, requeued_at=row.requeued_at).update(
        requeued_at=stamp, requeues=F("requeues") + 1)
    if not n:
        return False
    log.warning("dataset %s: no worker took its build within %.0f s of queueing it; queued again", row.dataset_id,
                pickup_s())
    dispatch(row.dataset_id)
    return True


def sweep() -> int:
    """Every build in progress looked at (lookup): dead ones recorded failed, untaken ones queued
    again. Beat runs it (tables.tasks), so a build nobody asks about is not left behind."""
    ids = list(Dataset.objects.filter(state=BUILDING).values_list("dataset_id", flat=True))
    for dataset_id in ids:
        lookup(dataset_id)
    return len(ids)


MISSING = ("the dataset's files are not in this process's store (removed by hand, or the web and the worker do not "
           "share tables.store_directory); call again with the selection to build it again")


def missing(row: Dataset) -> Dataset:
    """A ready dataset whose folder this process cannot read, recorded failed."""
    log.error("dataset %s is ready but its files are not in the store here; recorded as failed (do web and worker "
              "share tables.store_directory?)", row.dataset_id)
    Dataset.objects.filter(pk=row.pk, state=READY).update(
        state=FAILED, error={"code": "internal_error", "message": MISSING, "retryable": True}, size_bytes=0,
        progress={**row.progress, "phase": "failed"})
    row.refresh_from_db()
    return row


def touch(row: Dataset) -> None:
    row.last_used_at = now()
    Dataset.objects.filter(pk=row.pk).update(last_used_at=row.last_used_at)


def ready_folder(dataset_id: str, cfg: EcoConfig | None = None) -> Path | None:
    """A ready dataset's folder, or None. Its last use is touched first, so neither least-recently-
    used order nor the in-use window (evict) lets it go while the caller reads it. A ready row
    whose files this process cannot read is recorded failed (missing)."""
    from tables.query import folder_in

    if not DATASET_ID.fullmatch(dataset_id):
        return None
    row = Dataset.objects.filter(dataset_id=dataset_id, state=READY).first()
    if row is None:
        return None
    touch(row)
    folder = folder_in(store_root(cfg or get_config()), dataset_id)
    if folder is None:
        missing(row)
    return folder


def ready_ids(limit: int = 200) -> list[str]:
    """The most recently used ready datasets' ids (suggestions for a mistyped one)."""
    return list(Dataset.objects.filter(state=READY).order_by("-last_used_at").values_list(
        "dataset_id", flat=True)[:limit])


def claim(dataset_id: str, *, product: str, selection: dict[str, Any], plan: dict[str, Any], planned_bytes: int,
          requested_by: str) -> tuple[Dataset, bool]:
    """The dataset's row, created `building` when new, or restarted when its last build failed
    (fewer than MAX_ATTEMPTS so far). True: this call must dispatch the build. The row lock makes
    two callers asking for the same dataset at once share one build."""
    cfg = get_config()
    existing = Dataset.objects.filter(dataset_id=dataset_id).values_list("state", "attempts").first()
    if existing is None or (existing[0] == FAILED and existing[1] < MAX_ATTEMPTS):
        make_room(cfg, planned_bytes, dataset_id)

    def once() -> tuple[Dataset, bool] | None:
        stamp = now()
        try:
            with transaction.atomic():
                row = Dataset.objects.select_for_update().filter(dataset_id=dataset_id).first()
                if row is None:
                    _room_or_refuse(cfg, planned_bytes, dataset_id)
                    row = Dataset.objects.create(
                        dataset_id=dataset_id, product=product, selection=selection, plan=plan,
                        planned_bytes=planned_bytes, requested_by=requested_by, last_used_at=stamp,
                        queued_at=stamp, progress={"phase": "queued"})
                    return row, True
                held = row.lease_expires_at is not None and row.lease_expires_at > stamp
                if row.state == FAILED and row.attempts < MAX_ATTEMPTS and not held:
                    _room_or_refuse(cfg, planned_bytes, dataset_id)
                    row.state, row.plan, row.planned_bytes = BUILDING, plan, planned_bytes
                    row.attempts += 1
                    row.error, row.started_at, row.finished_at = None, None, None
                    row.lease_owner, row.lease_expires_at, row.requeued_at = "", None, None
                    row.progress = {"phase": "queued", "previousError": row.progress.get("error")}
                    row.last_used_at = row.queued_at = stamp
                    row.save()
                    return row, True
                return row, False
        except IntegrityError:
            return None  # another caller created it between our read and our insert: read theirs

    for _ in range(2):
        # A busy SQLite (another caller's transaction) is waited for, not reported as an outage.
        got = patiently(once, patience_s=BUSY_PATIENCE_S, what="claiming the dataset's row")
        if got is not None:
            return got
    row = Dataset.objects.get(dataset_id=dataset_id)
    return row, False


# How long a claim waits for a busy SQLite database (other callers' transactions) before the
# call answers catalog_unavailable.
BUSY_PATIENCE_S = 15.0
ROOM_LOCK = "dataset-store-room"


def in_flight_bytes(exclude: str | None = None) -> int:
    """Source bytes of the builds in progress: reserved from queueing to the build's end."""
    rows = Dataset.objects.filter(state=BUILDING)
    if exclude is not None:
        rows = rows.exclude(dataset_id=exclude)
    return int(rows.aggregate(n=Sum("planned_bytes"))["n"] or 0)


def make_room(cfg: EcoConfig, planned_bytes: int, dataset_id: str) -> None:
    """Evict least recently used ready datasets until a build of `planned_bytes` fits beside the
    builds in flight (best effort: what a query may be reading stays)."""
    reserve = in_flight_bytes(exclude=dataset_id) + planned_bytes
    if store_bytes() + reserve > cfg.tables.max_store_bytes:
        evict(cfg, keep=dataset_id, reserve=reserve)


def _room_or_refuse(cfg: EcoConfig, planned_bytes: int, dataset_id: str) -> None:
    """Inside the claim's transaction, one claim at a time (a transaction lock on PostgreSQL;
    SQLite writes one transaction at a time): the ready datasets, the builds in flight and this
    one must fit the cap, else the call is refused and nothing is recorded."""
    if connection.vendor == "postgresql":
        from catalog.services.run_lock import advisory_key

        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [advisory_key(ROOM_LOCK)])
    cap = cfg.tables.max_store_bytes
    ready, flying = store_bytes(), in_flight_bytes(exclude=dataset_id)
    if ready + flying + planned_bytes > cap:
        raise EcoError(
            "download_limit_exceeded",
            f"the dataset store has no room now: {ready} bytes of ready datasets in use and {flying} being "
            f"downloaded by other builds, and this selection needs {planned_bytes}, within {cap} "
            "(tables.max_store_bytes)", retryable=True,
            hint="Call again once the builds in progress are done, or narrow the sites, months or tables.",
            details={"bytes": planned_bytes, "inFlightBytes": flying, "storeBytes": ready, "maxBytes": cap,
                     "setting": "tables.max_store_bytes"})


# Sending a build to the broker: one quick retry, then the build runs here (see dispatch).
PUBLISH_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}


BROKER_DOWN = "The build queue is unreachable at the moment: this server builds the dataset itself."


def dispatch(dataset_id: str) -> str | None:
    """The build on a Celery worker when a broker is configured, else on a thread of this process
    (the call answers at once either way). A broker that cannot be reached (Redis down) does not
    fail the call: the build runs here, and the note returned tells the caller (None otherwise)."""
    from django.conf import settings

    if settings.CELERY_BROKER_URL:
        from celery import current_app
        from kombu.exceptions import OperationalError

        try:
            # By name: the project's app is the current one (eco_service's AppConfig makes it so).
            current_app.send_task(BUILD_TASK, args=[dataset_id], retry=True, retry_policy=PUBLISH_RETRY)
        except OperationalError as exc:
            log.warning("dataset %s: the build queue (Celery broker) is unreachable (%s); built in this process",
                        dataset_id, type(exc).__name__)
        else:
            log.info("dataset %s: build queued for a worker (queue %s)", dataset_id,
                     current_app.conf.task_default_queue)
            return None

    def target() -> None:
        try:
            run_build(dataset_id)
        except Exception:
            log.exception("dataset %s: the in-process build failed", dataset_id)
        finally:
            connections.close_all()  # this thread's connections would stay open until exit

    threading.Thread(target=target, name=f"eco-stack-{dataset_id[-8:]}", daemon=True).start()
    return BROKER_DOWN if settings.CELERY_BROKER_URL else None


# -- the build --------------------------------------------------------------------------------

class LeaseLost(Exception):
    """This build's lease is no longer its own (the row was deleted, recorded failed, or taken):
    it stops, and leaves the row and the files to whoever holds them now."""


class _Lease:
    """The build's lease, renewed on a thread of its own every `lease_s / LEASE_BEATS`; a renewal
    the database could not take is tried again every RETRY_S until it lands (a restart). `lost`
    is set once a renewal finds the lease no longer this build's."""

    def __init__(self, pk: int, owner: str, lease_s: float) -> None:
        self.pk, self.owner, self.lease_s = pk, owner, lease_s
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"eco-lease-{pk}", daemon=True)

    def start(self) -> _Lease:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def renew(self) -> bool:
        n = Dataset.objects.filter(pk=self.pk, state=BUILDING, lease_owner=self.owner).update(
            lease_expires_at=now() + timedelta(seconds=self.lease_s))
        return bool(n)

    def _run(self) -> None:
        beat = self.lease_s / LEASE_BEATS
        wait = beat
        try:
            while not self._stop.wait(wait):
                try:
                    if not self.renew():
                        log.warning("dataset build %s: its lease is no longer this build's; stopping", self.pk)
                        self.lost.set()
                        return
                    wait = beat
                except DATABASE_DOWN as exc:
                    log.warning("dataset build %s: lease not renewed (%s); trying again in %.0f s", self.pk,
                                type(exc).__name__, min(RETRY_S, beat))
                    _reset_connection()
                    wait = min(RETRY_S, beat)
        finally:
            connections.close_all()  # this thread's connection


@dataclass
class _Writer:
    """Progress into the row, at most every PROGRESS_EVERY_S (and always when forced), while the
    lease is this build's. Best effort: progress not written while the database is away is
    written at the next step."""

    pk: int
    state: dict[str, Any]
    owner: str = ""
    lease: _Lease | None = None
    last: float = 0.0
    pending: bool = field(default=False)

    def write(self, force: bool = False, **changes: Any) -> None:
        self.state.update(changes)
        if self.lease is not None and self.lease.lost.is_set():
            raise LeaseLost(self.pk)
        t = time.monotonic()
        if not force and not self.pending and t - self.last < PROGRESS_EVERY_S:
            return
        self.last = t
        try:
            n = Dataset.objects.filter(pk=self.pk, state=BUILDING, lease_owner=self.owner).update(
                progress=dict(self.state))
        except DATABASE_DOWN as exc:
            self.pending = True
            log.warning("dataset build %s: progress not recorded (%s); recorded at the next step", self.pk,
                        type(exc).__name__)
            _reset_connection()
            return
        self.pending = False
        if not n:
            raise LeaseLost(self.pk)


def _error_of(exc: BaseException, cfg: EcoConfig) -> dict[str, Any]:
    """What a caller may read of a failure: the code and a message without server paths."""
    if isinstance(exc, EcoError):
        code, message, retryable = exc.code, exc.message, exc.retryable
    else:
        code, message, retryable = "internal_error", f"the build failed ({type(exc).__name__})", True
    root = str(store_root(cfg))
    return {"code": code, "message": message.replace(root, "<store>"), "retryable": retryable}


def _owner() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def take_lease(dataset_id: str, owner: str, lease_s: float) -> bool:
    """The build's lease, when nobody has taken it since it was queued: one UPDATE that only an
    untaken building row matches, so of two runs (a redelivered task, a requeue) one builds."""
    stamp = now()
    n = Dataset.objects.filter(dataset_id=dataset_id, state=BUILDING, lease_expires_at__isnull=True).update(
        lease_owner=owner, lease_expires_at=stamp + timedelta(seconds=lease_s), started_at=stamp)
    return bool(n)


def run_build(dataset_id: str) -> None:
    """Take the build's lease, download the planned files and stack them; record ready (then
    evict) or failed. Without the lease (another run has it, or the build ended) nothing is done."""
    cfg = get_config()
    lease_s = float(cfg.tables.build_lease_s)
    owner = _owner()
    if not patiently(lambda: take_lease(dataset_id, owner, lease_s), patience_s=lease_s, what="taking the lease"):
        log.info("dataset %s: its build is taken by another run or over; not built twice", dataset_id)
        return
    row = patiently(lambda: Dataset.objects.get(dataset_id=dataset_id), patience_s=lease_s, what="reading the row")
    lease = _Lease(row.pk, owner, lease_s).start()
    writer = _Writer(row.pk, {"phase": "downloading"}, owner=owner, lease=lease)
    mine = Q(pk=row.pk, state=BUILDING, lease_owner=owner)
    try:
        try:
            size = _build(cfg, row, writer)
        except LeaseLost:
            if not patiently(lambda: Dataset.objects.filter(dataset_id=dataset_id).exists(), patience_s=lease_s):
                _remove(cfg, dataset_id)  # deleted while it built: nothing may keep its files
                return
            log.warning("dataset %s: build stopped, its lease was lost; the row and files are left to their holder",
                        dataset_id)
            return
        except BaseException as exc:
            error = _error_of(exc, cfg)
            log.warning("dataset %s: build failed: %s: %s", dataset_id, error["code"], error["message"])
            patiently(lambda: Dataset.objects.filter(mine).update(
                state=FAILED, error=error, finished_at=now(), lease_expires_at=None,
                progress={**writer.state, "error": error}), patience_s=lease_s, what="recording the failure")
            if not isinstance(exc, Exception):
                raise
            return
        done = patiently(lambda: Dataset.objects.filter(mine).update(
            state=READY, size_bytes=size, finished_at=now(), last_used_at=now(), lease_expires_at=None,
            progress={**writer.state, "phase": "ready"}, plan={}), patience_s=lease_s, what="recording the dataset")
        if not done:
            # Deleted while it built: nothing may keep its files. Lost to another run: theirs now.
            if not Dataset.objects.filter(dataset_id=dataset_id).exists():
                _remove(cfg, dataset_id)
            return
        shutil.rmtree(sources_of(cfg, dataset_id), ignore_errors=True)
        try:
            evict(cfg, keep=dataset_id)
        except DATABASE_DOWN:
            log.warning("dataset store: eviction after %s skipped (database away); the next build evicts", dataset_id)
    finally:
        lease.stop()


def _build(cfg: EcoConfig, row: Dataset, writer: _Writer) -> int:
    from downloads import paths
    from downloads.plan import Item, Plan, check
    from downloads.transfer import download
    from tables import dataset
    from tables.stack import SourceFile
    from upstream.client import close_loop_client
    from upstream.context import call_scope

    plan_json = row.plan
    root = sources_of(cfg, row.dataset_id)
    root.mkdir(parents=True, exist_ok=True)
    folder = folder_of(cfg, row.dataset_id)
    name_max, path_max = paths.limits(root)
    items = [Item(url=i["url"], rel=PurePosixPath(i["rel"]), name=i["name"], source="data", size=i["size"],
                  md5=i["md5"], token_only=False, product=row.product, site=i["site"], month=i["month"],
                  release=i["release"]) for i in plan_json["items"]]
    sources = [SourceFile(root / i.rel, i.name, i.md5, i.release or "PROVISIONAL") for i in items]
    fetch = [i for i, s in zip(items, sources, strict=True) if not _reusable(s.path, i)]
    total_bytes = sum(i.size or 0 for i in items)
    writer.write(force=True, filesTotal=len(items), filesDownloaded=len(items) - len(fetch), bytesTotal=total_bytes,
                 bytesDownloaded=total_bytes - sum(i.size or 0 for i in fetch), tablesDone=0, tablesTotal=None)
    loop = asyncio.new_event_loop()
    try:
        step = BATCH_PER_SLOT * cfg.eco.max_concurrency
        for k in range(0, len(fetch), step):
            batch = Plan(root=root, base=PurePosixPath("."), name_max=name_max, path_max=path_max,
                         confiner=paths.Confiner(root), items=fetch[k:k + step])
            # Checked again here: the store's own directory, hosts and caps, before any byte.
            check(batch, cfg, if_exists="skip", max_bytes=None, max_files=cfg.downloads.max_stack_files)

            async def one(batch: Plan = batch) -> Any:
                # No token: the signed URLs need none, and this process never had the caller's.
                with call_scope(token=None):
                    return await download(_client(), cfg, batch)

            loop.run_until_complete(one())
            st = writer.state
            writer.write(force=True, filesDownloaded=st["filesDownloaded"] + len(batch.items),
                         bytesDownloaded=st["bytesDownloaded"] + sum(i.size or 0 for i in batch.items))
    finally:
        with contextlib.suppress(Exception):
            loop.run_until_complete(close_loop_client())
        loop.close()

    def report(p: dataset.Progress) -> None:
        writer.write(force=p.tables_done == p.tables_total, phase="stacking", tablesDone=p.tables_done,
                     tablesTotal=p.tables_total, filesRead=p.files_done, filesToRead=p.files_total)

    writer.write(force=True, phase="stacking")
    dataset.build(folder, dataset.table_sources(sources), root=root, product=row.product,
                  package=row.selection["package"], wanted=row.selection.get("tables"), selection=row.selection,
                  citations=plan_json.get("citations") or [], issue_log=plan_json.get("issueLog"),
                  progress=dataset.Progress(report=report))
    return _size(folder)


def _reusable(path: Path, item: Any) -> bool:
    """A source already in the store (an earlier attempt's) is stacked again only when it has the
    listing's size and MD5: a same-size file edited since is fetched again (the download replaces
    it), not stacked as NEON's."""
    from downloads.transfer import md5_of

    if not on_disk(path, item.size):
        return False
    if not item.md5:
        return True
    try:
        return md5_of(path) == item.md5
    except OSError:
        return False


def _client() -> Any:
    from upstream.client import get_client

    return get_client()


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- eviction and deletion ----------------------------------------------------------------------

def _remove(cfg: EcoConfig, dataset_id: str) -> None:
    from tables import engine, query

    engine.forget(folder_of(cfg, dataset_id))  # the engine workers of this process
    query.forget(folder_of(cfg, dataset_id))  # and engines kept in this one
    shutil.rmtree(folder_of(cfg, dataset_id), ignore_errors=True)
    shutil.rmtree(sources_of(cfg, dataset_id), ignore_errors=True)


def in_use_s(cfg: EcoConfig) -> float:
    """How long after its last use a dataset may still be read: a query touches it (ready_folder)
    before it starts and ends within the call's deadline (its wall-time limit is cut to fit)."""
    return max(cfg.eco.call_deadline_s, cfg.tables.query_timeout_s)


def evict(cfg: EcoConfig, keep: str | None = None, reserve: int | None = None) -> list[str]:
    """Delete the least recently used ready datasets (never `keep`, nor one used within in_use_s,
    which a query may be reading) until the ready ones and the bytes in flight (`reserve`, by
    default every build in progress) fit tables.max_store_bytes; the ids deleted. The store may
    stay over its cap until those queries are over."""
    cap = cfg.tables.max_store_bytes - (in_flight_bytes() if reserve is None else reserve)
    gone: list[str] = []
    ready = list(Dataset.objects.filter(state=READY).order_by("last_used_at").values_list(
        "dataset_id", "size_bytes", "last_used_at"))
    used = sum(size for _, size, _ in ready)
    recent = now().timestamp() - in_use_s(cfg)
    for dataset_id, size, last_used in ready:
        if used <= cap:
            break
        if dataset_id == keep or last_used.timestamp() > recent:
            continue
        # Conditional on the last use read: a query touching it since then keeps it.
        if Dataset.objects.filter(dataset_id=dataset_id, state=READY, last_used_at=last_used).delete()[0]:
            _remove(cfg, dataset_id)
            gone.append(dataset_id)
            log.info("dataset store: evicted %s (%d bytes, least recently used)", dataset_id, size)
        used -= size
    if used > cap:
        log.warning("dataset store: %d bytes ready beside %d in flight, over its cap of %d: the rest is in use or "
                    "being kept", used, cfg.tables.max_store_bytes - cap, cfg.tables.max_store_bytes)
    return gone


def delete(dataset_id: str, cfg: EcoConfig | None = None) -> bool:
    """Remove a dataset's row and files (a build still running finds its row gone and discards
    what it made)."""
    if not DATASET_ID.fullmatch(dataset_id):
        return False
    n = Dataset.objects.filter(dataset_id=dataset_id).delete()[0]
    _remove(cfg or get_config(), dataset_id)
    return bool(n)


def store_bytes() -> int:
    return int(Dataset.objects.filter(state=READY).aggregate(n=Sum("size_bytes"))["n"] or 0)
