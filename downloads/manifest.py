"""The download directory's manifest: what every downloaded file is and where it came from.

`eco-manifest.json` in the download directory maps each file's path (relative, '/'-separated)
to its size, MD5, product, site, month, release (or PROVISIONAL), the release DOI, the citation
text and when it was fetched. A later call over the same selectors compares the plan with it:
a file whose upstream MD5 or release differs from the manifest's has changed upstream since.
Written whole to a temporary file of an unguessable name, created exclusively and never through
a symlink, then renamed, so a crash never leaves half a manifest and nothing planted in the
directory is written through. What stands at the manifest's name and is not a regular file is
never read or followed: a symlink (or other special file) is replaced by the manifest, a
directory is left alone and the call says so.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("eco.downloads")

NAME = "eco-manifest.json"
VERSION = 1
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_NONBLOCK: a FIFO at the manifest's name must not hold the call waiting for a writer.
_READ = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


def path_of(root: Path) -> Path:
    return root / NAME


def load(root: Path) -> dict[str, dict[str, Any]]:
    """The manifest's files; nothing when it is missing, unreadable or not a regular file."""
    try:
        fd = os.open(path_of(root), _READ)
    except OSError:  # not there, or a symlink (ELOOP): never followed
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def changed(entry: dict[str, Any] | None, md5: str | None, release: str | None) -> bool:
    """True when the manifest knew this path and upstream now gives another MD5 or release."""
    if entry is None:
        return False
    return (md5 is not None and entry.get("md5") not in (None, md5)) or (
        release is not None and entry.get("release") not in (None, release))


def update(root: Path, entries: dict[str, dict[str, Any]]) -> str | None:
    """Record `entries`; a note for the caller when what held the manifest's name was not the
    manifest, or the manifest could not be written (the files themselves are fine either way)."""
    if not entries:
        return None
    target = path_of(root)
    try:
        there = os.lstat(target).st_mode
    except OSError:
        there = None
    if there is not None and stat.S_ISDIR(there):
        log.warning("download manifest not written: %s is a directory", target)
        return (f"{NAME} in the download directory is a directory, not the manifest, so this call's files were "
                "not recorded: move that directory out of the way and the next call writes the manifest.")
    files = load(root)
    files.update(entries)
    try:
        root.mkdir(parents=True, exist_ok=True)
        _write(root, target, _text(files))
    except OSError as exc:
        log.warning("download manifest not written: %s", exc.strerror or exc)
        return f"{NAME} could not be written ({exc.strerror or exc}); this call's files were not recorded in it."
    if there is not None and not stat.S_ISREG(there):
        what = "a symlink" if stat.S_ISLNK(there) else "not a regular file"
        log.warning("download manifest was %s; not followed, replaced", what)
        return f"{NAME} in the download directory was {what}: it was not read or followed, and is now replaced by the manifest."
    return None


def _write(root: Path, target: Path, text: str) -> None:
    """`text` into a new file of an unguessable name beside `target`, then renamed over it
    (rename replaces a symlink itself, never what it points to)."""
    for _ in range(8):
        tmp = root / f".{NAME}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, _CREATE, 0o644)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(f"no free temporary name beside {NAME}")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _text(files: dict[str, dict[str, Any]]) -> str:
    """One file per line: readable and diffable, and every line made by json's C encoder (with
    `indent`, json encodes in pure Python, on the call's event loop)."""
    lines = ",\n".join(f"{json.dumps(path)}: {json.dumps(entry)}" for path, entry in sorted(files.items()))
    return f'{{"version": {VERSION}, "files": {{\n{lines}\n}}}}\n'


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
