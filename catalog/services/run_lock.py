"""A lock held for the length of one run, across every process on the database, that dies with its
holder.

    lock = try_hold("subtrees")   # None while a live run (this process or another) holds it
    ...
    lock.release()
    held("subtrees")              # whether a live run holds it now, taking nothing

`held` is how a record a run keeps ("running", a progress) is told from one a dead run left: a
run takes its lock before it writes such a record and writes its final record before it lets go,
so a record that says "running" while the lock is free was left by a run that died.

Why not a timestamp in a row: a process killed -9 cannot clear it, so the next run had to wait
until the timestamp looked old (catalog.services.location_subtrees waited up to 10 minutes). These
locks belong to something the operating system or the database server takes away when the
process dies:

    PostgreSQL  a session advisory lock (pg_try_advisory_lock) on a connection of its own; when the
                process dies the server sees the socket close, ends the session and frees the lock
    SQLite      flock on a file beside the database (`<db>.<name>-run-lock`); the kernel drops it
                when the process's descriptor goes, whatever killed it
    in-memory   (tests' SQLite) a process-local lock: nobody else can see that database

Two runs in ONE process exclude each other too: each PostgreSQL hold is its own session, each
flock its own open file description.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path
from typing import Any, Protocol

from django.db import connections


class RunLock(Protocol):
    def release(self) -> None: ...


def advisory_key(name: str) -> int:
    """The advisory lock key of `name` (a signed 64-bit integer, as PostgreSQL takes it)."""
    return int.from_bytes(hashlib.blake2b(f"eco-run:{name}".encode(), digest_size=8).digest(), "big", signed=True)


class _Session:
    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def release(self) -> None:
        # Ending the session frees the lock: no unlock statement that could fail half-way.
        with contextlib.suppress(Exception):
            self._raw.close()


class _File:
    def __init__(self, handle: Any, path: Path | None = None) -> None:
        self._handle = handle
        self._path = path  # removed on release: a lock named per run would leave a file per run

    def release(self) -> None:
        import fcntl

        if self._path is not None:
            # Removed while still held: whoever opens the name later finds no file, not a stale one.
            with contextlib.suppress(OSError):
                self._path.unlink()
        with contextlib.suppress(OSError):
            fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()


class _Local:
    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def release(self) -> None:
        self._lock.release()


_local: dict[str, threading.Lock] = {}
_local_guard = threading.Lock()


def _postgres(alias: str, name: str) -> RunLock | None:
    connection = connections[alias]
    # A connection of its own: Django closes its per-thread connections at the end of requests
    # and tasks, which would free a session lock taken on them in the middle of the run.
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = True
        with raw.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", [advisory_key(name)])
            held = bool(cur.fetchone()[0])
    except BaseException:
        raw.close()
        raise
    if not held:
        raw.close()
        return None
    return _Session(raw)


def lock_path(db_name: str, name: str) -> Path:
    path = Path(db_name)
    return path.with_name(f"{path.name}.{name}-run-lock")


def _in_memory(alias: str) -> bool:
    db_name = str(connections[alias].settings_dict["NAME"])
    return db_name == ":memory:" or "mode=memory" in db_name


def _local_lock(alias: str, name: str) -> threading.Lock:
    with _local_guard:
        return _local.setdefault(f"{alias}:{name}", threading.Lock())


def _sqlite(alias: str, name: str, transient: bool) -> RunLock | None:
    import fcntl

    if _in_memory(alias):
        lock = _local_lock(alias, name)
        return _Local(lock) if lock.acquire(blocking=False) else None
    # A file of its own: locking the database file would fight SQLite's own locks on it.
    path = lock_path(str(connections[alias].settings_dict["NAME"]), name)
    handle = path.open("a+b")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    except BaseException:
        handle.close()
        raise
    return _File(handle, path if transient else None)


def try_hold(name: str, alias: str = "default", *, transient: bool = False) -> RunLock | None:
    """Hold the run lock `name` now, or None when a live holder has it (never waits).
    `transient`: a name used for one run only (its file beside SQLite goes on release)."""
    vendor = connections[alias].vendor
    if vendor == "postgresql":
        return _postgres(alias, name)
    if vendor == "sqlite":
        return _sqlite(alias, name, transient)
    raise RuntimeError(f"no run lock for the {vendor} database backend")


def held(name: str, alias: str = "default") -> bool:
    """Whether a live holder (this process or another) has the run lock `name` now. PostgreSQL:
    the server's lock table, read without taking anything. SQLite: a shared flock tried and let
    go at once (a holder's exclusive one refuses it); no file means no holder."""
    vendor = connections[alias].vendor
    if vendor == "postgresql":
        key = advisory_key(name)
        with connections[alias].cursor() as cur:
            # A bigint key is held as two 32-bit halves, high in classid, low in objid.
            cur.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
                        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                        "AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1)",
                        [(key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF])
            return bool(cur.fetchone()[0])
    if vendor == "sqlite":
        if _in_memory(alias):
            return _local_lock(alias, name).locked()
        import fcntl

        try:
            handle = lock_path(str(connections[alias].settings_dict["NAME"]), name).open("rb")
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            handle.close()  # closing drops the shared lock, if it was taken
        return False
    raise RuntimeError(f"no run lock for the {vendor} database backend")
