"""A built search index kept on disk, so a new process whose database holds the same catalogs
takes it at a fraction of a build's cost (a build reads and parses every availability row).

    load(versions, info, make) -> CatalogIndex | None   the kept index of exactly these catalogs
    save(idx)                                     keep `idx` (best effort), forgetting older ones

A stdio server is a new process per agent session, and its first catalog call would otherwise
wait for the build. The file sits in the data folder's cache/
(next to the kept tool listing, mcp_gateway/registry.py), one per host: replicas sharing one
PostgreSQL database each keep their own, which is fine.

The file is named by everything its content depends on, so a file that does not match is never
read: the catalog state (each catalog's version and the time its rows were swapped in, which a
database recreated from scratch does not repeat even where its versions do), the database it
came from, and the code (the stats of the modules whose classes it holds and that build it, the
Python version and FORMAT). Any failure to read it means a build, never an error; any failure
to write it is logged and ignored.

It is a pickle: the data folder is the service's own trusted state, beside its SQLite database
(whoever can write a file there can already change the catalogs); pickling also keeps the
sharing of equal values within the index (catalog.index._Shared) since one pickle stores an
object once however often it is referenced. What is per process is not kept: the memo of query
words (`_token_cache`), the build time, and `info` (refresh times and row counts, read from the
database at every load since they change without a new catalog version).

What a load costs against a build is measured by bench/bench_memory.py.

Only indexes of swapped-in catalogs are kept (every catalog has a refresh time): hand-made
catalog states, as tests make, carry no stamp that tells one catalog from another. A private
in-memory database (the test suite's SQLite) keeps nothing unless FOLDER names a folder.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Types only: catalog.index imports this module to load and save its index.
    from catalog.index import CatalogIndex, CatalogInfo


log = logging.getLogger("eco.catalog")

FORMAT = 1
PREFIX = "index-"
SUFFIX = ".pickle"
# The modules whose code decides what an index holds; any change to one is a new file name.
CODE = ("index.py", "index_snapshot.py", "models.py")
# Not kept: per-process state (see the module docstring).
PER_PROCESS = frozenset({"info", "_token_cache", "built_at"})
STALE_TMP_S = 3600.0

# A folder to keep snapshots in, whatever the database; None: the data folder's cache/, except
# for a private in-memory database.
FOLDER: Path | None = None


def _database() -> str | None:
    from django.db import connection

    s = connection.settings_dict
    name = str(s.get("NAME") or "")
    if FOLDER is None and connection.vendor == "sqlite" and (name == ":memory:" or "mode=memory" in name):
        return None
    return f"{connection.vendor}|{name}|{s.get('HOST') or ''}|{s.get('PORT') or ''}"


def _folder() -> Path:
    if FOLDER is not None:
        return FOLDER
    from django.conf import settings

    return Path(settings.DATA_DIR) / "cache"


def _code() -> str:
    here = Path(__file__).resolve().parent
    parts = [f"{FORMAT}|{sys.version}|{pickle.HIGHEST_PROTOCOL}"]
    for name in CODE:
        st = (here / name).stat()
        parts.append(f"{name}|{st.st_mtime_ns}|{st.st_size}")
    return "\n".join(parts)


def _name(info: dict[str, CatalogInfo]) -> str | None:
    """The file name for an index of these catalogs, or None when none may be kept."""
    if not info or any(i.refreshed_at is None for i in info.values()):
        return None
    database = _database()
    if database is None:
        return None
    state = "|".join(f"{c}={i.version}@{i.refreshed_at.isoformat()}" for c, i in sorted(info.items()))  # type: ignore[union-attr]
    digest = hashlib.sha256(f"{_code()}\n{database}\n{state}".encode()).hexdigest()[:32]
    return f"{PREFIX}{digest}{SUFFIX}"


def load(versions: dict[str, int], info: dict[str, CatalogInfo],
         make: Callable[..., CatalogIndex]) -> CatalogIndex | None:
    """The kept index of exactly these catalog versions, with `info` as its current state; None
    when there is none or it cannot be read (the caller builds). The caller (catalog.index,
    which installs it) runs this with the cyclic collector off and freezes what it gets."""
    try:
        name = _name(info)
        if name is None:
            return None
        path = _folder() / name
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except Exception as exc:  # a snapshot is an optimisation: never an error
        log.debug("no index snapshot: %s", exc)
        return None
    try:
        kept = pickle.loads(data)
        if not (isinstance(kept, dict) and kept.get("format") == FORMAT and kept.get("versions") == versions
                and isinstance(kept.get("index"), dict)):
            raise ValueError("not a snapshot of these catalog versions")
        return make(info=info, **kept["index"])
    except Exception as exc:  # truncated, corrupt, or of other code: build instead
        log.info("ignoring the unreadable index snapshot %s: %s", path, exc)
        return None


def save(idx: CatalogIndex) -> None:
    """Keep `idx` for the next process (replacing a kept file of the same name: it could not be
    read, or this would not have been built), then remove the snapshots of other catalogs or
    code. Best effort: failing costs the next process a build."""
    try:
        name = _name(idx.info)
        if name is None:
            return
        folder = _folder()
        path = folder / name
        kept: dict[str, Any] = {
            "format": FORMAT,
            "versions": idx.versions,
            "index": {f.name: getattr(idx, f.name) for f in fields(idx) if f.name not in PER_PROCESS},
        }
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole under a name of its own, then renamed: a reader sees the old file, no
        # file, or the new one, never part of one (another process may be writing the same).
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        try:
            tmp.write_bytes(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        for old in folder.glob(f"{PREFIX}*{SUFFIX}"):
            if old.name != name:
                old.unlink(missing_ok=True)
        # What a writer killed between writing and renaming left (a live one renames in seconds).
        for stale in folder.glob(f".{PREFIX}*.tmp"):
            if time.time() - stale.stat().st_mtime > STALE_TMP_S:
                stale.unlink(missing_ok=True)
    except Exception as exc:  # e.g. a read-only data folder, a full disk
        log.debug("could not keep the index snapshot: %s", exc)
