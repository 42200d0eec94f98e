"""The download directory's manifest: what every downloaded file is and where it came from.

`eco-manifest.json` in the download directory maps each file's path (relative, '/'-separated)
to its size, MD5, product, site, month, release (or PROVISIONAL), the release DOI, the citation
text and when it was fetched. A later call over the same selectors compares the plan with it:
a file whose upstream MD5 or release differs from the manifest's has changed upstream since.
Written whole to a temporary name and renamed, so a crash never leaves half a manifest.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

NAME = "eco-manifest.json"
VERSION = 1


def path_of(root: Path) -> Path:
    return root / NAME


def load(root: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path_of(root).read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def changed(entry: dict[str, Any] | None, md5: str | None, release: str | None) -> bool:
    """True when the manifest knew this path and upstream now gives another MD5 or release."""
    if entry is None:
        return False
    return (md5 is not None and entry.get("md5") not in (None, md5)) or (
        release is not None and entry.get("release") not in (None, release))


def update(root: Path, entries: dict[str, dict[str, Any]]) -> None:
    if not entries:
        return
    files = load(root)
    files.update(entries)
    root.mkdir(parents=True, exist_ok=True)
    tmp = path_of(root).with_name(f".{NAME}.{os.getpid()}.tmp")
    tmp.write_text(_text(files))
    os.replace(tmp, path_of(root))


def _text(files: dict[str, dict[str, Any]]) -> str:
    """One file per line: readable and diffable, and every line made by json's C encoder (with
    `indent` json encodes in Python, ~10 ms for a hundred files on the call's event loop)."""
    lines = ",\n".join(f"{json.dumps(path)}: {json.dumps(entry)}" for path, entry in sorted(files.items()))
    return f'{{"version": {VERSION}, "files": {{\n{lines}\n}}}}\n'


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
