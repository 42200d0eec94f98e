"""The HTTP deployment's dataset store: stacked datasets built on the server, shared by callers.

    store_root(cfg) -> Path                     tables.store_directory, or the data folder's datasets/
    dataset_key(...) -> str                     selection + every source's name, MD5 and release
    lookup(id) -> Dataset | None                its row; a build whose worker died is recorded failed
    claim(id, ...) -> (Dataset, queued)         one row per dataset: two callers share ONE build
    dispatch(id) -> note | None                  Celery when a broker is set and reachable, else a
                                                 thread here
    run_build(id)                                the build itself (the worker, or that thread)
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
once it is ready. A build holds a run lock (catalog.services.run_lock) from before it records
`started_at` until it records its end, so a row reading `building` with a start and a free lock was
left by a worker that died; the next look records it failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import shutil
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from django.db import IntegrityError, connections, transaction

from eco_core.config import EcoConfig, get_config
from eco_core.errors import EcoError
from tables.layout import DATASET_ID_PATTERN, on_disk
from tables.models import BUILDING, FAILED, READY, Dataset

log = logging.getLogger("eco.tables")

BUILD_TASK = "tables.build_dataset"
SOURCES = ".sources"
DATASET_ID = re.compile(DATASET_ID_PATTERN)
RUN_LOCK = "dataset-build-{}"
# A failed build is restarted by a call with its selection this many times in all; then the
# failure is the answer until an operator deletes the dataset.
MAX_ATTEMPTS = 3
# Progress is written to the row at most this often (each write is one UPDATE).
PROGRESS_EVERY_S = 1.0
# Files per download batch, as concurrency allows: progress is written between batches.
BATCH_PER_SLOT = 2
DIED = "the worker building this dataset ended before it finished (killed or crashed); call again to retry"
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

def _alive(dataset_id: str) -> bool:
    from django.db import DatabaseError

    from catalog.services.run_lock import held

    try:
        return held(RUN_LOCK.format(dataset_id))
    except DatabaseError:
        return True  # cannot tell while the database is away: the row stays as recorded


def lookup(dataset_id: str) -> Dataset | None:
    """The dataset's row; a build whose worker died (started, lock free) is recorded failed."""
    row = Dataset.objects.filter(dataset_id=dataset_id).first()
    if row is None or row.state != BUILDING:
        return row
    if row.started_at is not None and not _alive(dataset_id):
        # Conditional on the start read: a build records its end before letting go of its lock.
        n = Dataset.objects.filter(pk=row.pk, state=BUILDING, started_at=row.started_at).update(
            state=FAILED, finished_at=now(), error={"code": "internal_error", "message": DIED, "retryable": True})
        if n:
            log.warning("dataset %s: its build ended without finishing; recorded as failed", dataset_id)
        row.refresh_from_db()
    elif (row.started_at is None and row.queued_at is not None
          and (now() - row.queued_at).total_seconds() > QUEUE_WAIT_S):
        n = Dataset.objects.filter(pk=row.pk, state=BUILDING, started_at=None, queued_at=row.queued_at).update(
            state=FAILED, finished_at=now(), error={"code": "internal_error", "message": LOST, "retryable": True})
        if n:
            log.warning("dataset %s: no worker started its build; recorded as failed", dataset_id)
        row.refresh_from_db()
    return row


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
    stamp = now()
    for _ in range(2):
        try:
            with transaction.atomic():
                row = Dataset.objects.select_for_update().filter(dataset_id=dataset_id).first()
                if row is None:
                    row = Dataset.objects.create(
                        dataset_id=dataset_id, product=product, selection=selection, plan=plan,
                        planned_bytes=planned_bytes, requested_by=requested_by, last_used_at=stamp,
                        queued_at=stamp, progress={"phase": "queued"})
                    return row, True
                if row.state == FAILED and row.attempts < MAX_ATTEMPTS and not _alive(dataset_id):
                    row.state, row.plan, row.planned_bytes = BUILDING, plan, planned_bytes
                    row.attempts += 1
                    row.error, row.started_at, row.finished_at = None, None, None
                    row.progress = {"phase": "queued", "previousError": row.progress.get("error")}
                    row.last_used_at = row.queued_at = stamp
                    row.save()
                    return row, True
                return row, False
        except IntegrityError:
            continue  # another caller created it between our read and our insert: read theirs
    row = Dataset.objects.get(dataset_id=dataset_id)
    return row, False


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

@dataclass
class _Writer:
    """Progress into the row, at most every PROGRESS_EVERY_S (and always when forced)."""

    pk: int
    state: dict[str, Any]
    last: float = 0.0

    def write(self, force: bool = False, **changes: Any) -> None:
        self.state.update(changes)
        t = time.monotonic()
        if not force and t - self.last < PROGRESS_EVERY_S:
            return
        self.last = t
        Dataset.objects.filter(pk=self.pk, state=BUILDING).update(progress=dict(self.state))


def _error_of(exc: BaseException, cfg: EcoConfig) -> dict[str, Any]:
    """What a caller may read of a failure: the code and a message without server paths."""
    if isinstance(exc, EcoError):
        code, message, retryable = exc.code, exc.message, exc.retryable
    else:
        code, message, retryable = "internal_error", f"the build failed ({type(exc).__name__})", True
    root = str(store_root(cfg))
    return {"code": code, "message": message.replace(root, "<store>"), "retryable": retryable}


def run_build(dataset_id: str) -> None:
    """Download the planned files and stack them; record ready (then evict) or failed."""
    from catalog.services.run_lock import try_hold

    lock = try_hold(RUN_LOCK.format(dataset_id), transient=True)
    if lock is None:
        log.info("dataset %s is being built by another process; not built twice", dataset_id)
        return
    try:
        row = Dataset.objects.filter(dataset_id=dataset_id, state=BUILDING).first()
        if row is None:
            return  # deleted, or finished by a build before this one
        cfg = get_config()
        row.started_at = now()
        Dataset.objects.filter(pk=row.pk).update(started_at=row.started_at)
        writer = _Writer(row.pk, {"phase": "downloading"})
        try:
            size = _build(cfg, row, writer)
        except BaseException as exc:
            error = _error_of(exc, cfg)
            log.warning("dataset %s: build failed: %s: %s", dataset_id, error["code"], error["message"])
            Dataset.objects.filter(pk=row.pk, state=BUILDING).update(
                state=FAILED, error=error, finished_at=now(), progress={**writer.state, "error": error})
            if not isinstance(exc, Exception):
                raise
            return
        done = Dataset.objects.filter(pk=row.pk, state=BUILDING).update(
            state=READY, size_bytes=size, finished_at=now(), last_used_at=now(),
            progress={**writer.state, "phase": "ready"}, plan={})
        if not done:  # deleted while it built: nothing may keep its files
            _remove(cfg, dataset_id)
            return
        shutil.rmtree(sources_of(cfg, dataset_id), ignore_errors=True)
        evict(cfg, keep=dataset_id)
    finally:
        lock.release()


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
    fetch = [i for i, s in zip(items, sources, strict=True) if not on_disk(s.path, i.size)]
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


def _client() -> Any:
    from upstream.client import get_client

    return get_client()


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# -- eviction and deletion ----------------------------------------------------------------------

def _remove(cfg: EcoConfig, dataset_id: str) -> None:
    from tables.query import forget

    forget(folder_of(cfg, dataset_id))
    shutil.rmtree(folder_of(cfg, dataset_id), ignore_errors=True)
    shutil.rmtree(sources_of(cfg, dataset_id), ignore_errors=True)


def in_use_s(cfg: EcoConfig) -> float:
    """How long after its last use a dataset may still be read: a query touches it (ready_folder)
    before it starts and ends within the call's deadline (its wall-time limit is cut to fit)."""
    return max(cfg.eco.call_deadline_s, cfg.tables.query_timeout_s)


def evict(cfg: EcoConfig, keep: str | None = None) -> list[str]:
    """Delete the least recently used ready datasets (never `keep`, nor one used within in_use_s,
    which a query may be reading) until the ready ones fit tables.max_store_bytes; the ids
    deleted. The store may stay over its cap until those queries are over."""
    cap = cfg.tables.max_store_bytes
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
        log.warning("dataset store: %d bytes, over its cap of %d: the rest is in use or being kept", used, cap)
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
    from django.db.models import Sum

    return int(Dataset.objects.filter(state=READY).aggregate(n=Sum("size_bytes"))["n"] or 0)
