"""Start-up work shared by every entry point."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections, transaction
from django.db.migrations.executor import MigrationExecutor

log = logging.getLogger("eco.bootstrap")

# One fixed key for "this database is being migrated". Advisory locks are per database, so
# replicas of different deployments on one server never wait for each other.
MIGRATE_LOCK_KEY = 0x65636F5F6D696772  # b"eco_migr"

_held = threading.local()


def _pending(alias: str) -> int:
    connection = connections[alias]
    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


@contextmanager
def _postgres_lock(alias: str) -> Iterator[None]:
    connection = connections[alias]
    # A connection of its own: the session lock must outlive anything migrate does to Django's
    # connection, and closing it (or the process dying) releases the lock.
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = True
        with raw.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
            if not cur.fetchone()[0]:
                log.info("waiting for another process to finish the database migrations")
                cur.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
        yield
    finally:
        raw.close()


@contextmanager
def _sqlite_lock(alias: str) -> Iterator[None]:
    import fcntl

    name = str(connections[alias].settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        yield  # private to this process: nobody to race
        return
    path = Path(name)
    ensure_sqlite_folder(alias)
    # A separate file: locking the database file itself would fight SQLite's own locks on it.
    with open(path.with_name(path.name + ".migrate-lock"), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process to finish the database migrations")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def migration_lock(alias: str = "default") -> Iterator[None]:
    """Hold the database-wide migration lock: one process at a time plans and applies
    migrations, across every process pointed at the same database. Re-entrant in one thread,
    so `migrate` run from inside a holder does not wait for itself."""
    depth = getattr(_held, alias, 0)
    if depth:
        setattr(_held, alias, depth + 1)
        try:
            yield
        finally:
            setattr(_held, alias, depth)
        return
    vendor = connections[alias].vendor
    if vendor == "postgresql":
        lock = _postgres_lock(alias)
    elif vendor == "sqlite":
        lock = _sqlite_lock(alias)
    else:
        raise RuntimeError(f"no migration lock for the {vendor} database backend")
    with lock:
        setattr(_held, alias, 1)
        try:
            yield
        finally:
            setattr(_held, alias, 0)


def ensure_sqlite_folder(alias: str = "default") -> None:
    """SQLite creates its file but not the folder; the data dir may not exist on first start."""
    db = settings.DATABASES[alias]
    if db["ENGINE"].endswith("sqlite3") and str(db["NAME"]) != ":memory:" and "mode=memory" not in str(db["NAME"]):
        Path(db["NAME"]).parent.mkdir(parents=True, exist_ok=True)


def _hooks_undone(alias: str) -> bool:
    """Django records each migration before the post-migrate hooks run, so a process killed
    between the two leaves no migration pending and the hooks' work undone for good: content
    types, permissions and the catalog's beat schedule, without which Celery beat never refreshes
    the catalogs. The catalog's schedule comes at the end of that work (catalog is the last app
    with models), so the absence of either of its entries is the mark; `migrate` runs the hooks
    again with nothing to apply."""
    from django_celery_beat.models import PeriodicTask

    from catalog.schedule import PERIODIC_TASK_NAME, SUBTREES_PERIODIC_TASK_NAME

    names = {PERIODIC_TASK_NAME, SUBTREES_PERIODIC_TASK_NAME}
    return PeriodicTask.objects.using(alias).filter(name__in=names).count() < len(names)


def prepare_database() -> None:
    """Apply pending migrations, so the embedded SQLite default works on first start with
    nothing else to run. Migration output goes to stderr (stdout may be MCP framing).

    Safe when several processes start together on one fresh database: only the holder of
    the migration lock migrates; the others wait, then find nothing left to do."""
    ensure_sqlite_folder("default")
    # Reading the plan (and one row) takes no lock, so an up-to-date fleet restarting never queues.
    if not _pending("default") and not _hooks_undone("default"):
        return
    with migration_lock("default"):
        # Another process may have migrated while this one waited for the lock.
        pending = _pending("default")
        undone = not pending and _hooks_undone("default")
        if pending:
            log.info("applying %d database migrations", pending)
        elif undone:
            log.info("finishing the post-migrate work an interrupted migrate left undone")
        if pending or undone:
            with _all_or_nothing("default"):
                call_command("migrate", interactive=False, verbosity=0, stdout=sys.stderr, stderr=sys.stderr)


@contextmanager
def _all_or_nothing(alias: str) -> Iterator[None]:
    """On SQLite, the whole migrate in one transaction. Django records a migration with deferred
    SQL (foreign keys, indexes) only after that migration's transaction commits, so a start killed
    in between left a table with no record, and every later start failed on it ("table ... already
    exists"). SQLite's DDL is transactional: one transaction makes a kill roll the whole run back.
    Foreign-key checks go off first, as Django's SQLite schema editor needs them off outside any
    transaction."""
    conn = connections[alias]
    if conn.vendor != "sqlite":
        yield
        return
    conn.ensure_connection()
    conn.disable_constraint_checking()
    try:
        with transaction.atomic(using=alias):
            yield
    finally:
        conn.enable_constraint_checking()
