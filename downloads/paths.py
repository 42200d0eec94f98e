"""Where a download may land and where it may come from.

Every destination resolves inside the download directory: the sub-directory a caller names is
relative with no `..`, file names are plain names, and the resolved path (symlinks followed)
must stay under the resolved download directory. Every URL's host, and every redirect hop's,
must be on `downloads.allowed_hosts` ('*.' matches any subdomain). Each refusal is
`download_denied`, raised before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from eco_core.errors import EcoError


def denied(message: str, **details: object) -> EcoError:
    return EcoError("download_denied", message, details=dict(details))


def subdir(value: str | None, field: str = "dest_subdir") -> PurePosixPath:
    """A caller's sub-directory, checked as text (before any request)."""
    if value is None or value.strip() in ("", "."):
        return PurePosixPath()
    if "\x00" in value or "\\" in value:
        raise denied(f"{field}: must be a relative path with '/' separators", field=field)
    p = PurePosixPath(value)
    if p.is_absolute() or value.startswith("~"):
        raise denied(f"{field}: must be relative to the download directory, got an absolute path", field=field)
    if any(part == ".." for part in p.parts):
        raise denied(f"{field}: '..' would leave the download directory", field=field)
    return p


def plain_name(name: str, field: str = "file name") -> str:
    """A file name with no directory part (upstream names are not trusted to be plain)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise denied(f"{field}: {name!r} is not a plain file name", field=field)
    return name


def confine(root: Path, rel: PurePosixPath, field: str = "dest_subdir") -> Path:
    """root/rel, refused unless it resolves (symlinks followed) inside root."""
    return Confiner(root)(rel, field)


class Confiner:
    """confine() for the many files of one plan: the root and each directory are resolved once
    (realpath costs an lstat per path component), then each file needs one lstat to show its
    own name is not a symlink; a name that is one is resolved in full."""

    def __init__(self, root: Path) -> None:
        self.base = os.path.realpath(root)
        self.inside = self.base.rstrip("/") + "/"
        self.dirs: dict[str, str] = {}

    def __call__(self, rel: PurePosixPath, field: str = "dest_subdir") -> Path:
        parent, _, name = str(rel).rpartition("/")
        real_dir = self.dirs.get(parent)
        if real_dir is None:
            real_dir = self.dirs[parent] = os.path.realpath(os.path.join(self.base, parent))
        target = os.path.join(real_dir, name) if name else real_dir
        if name in ("", ".", "..") or os.path.islink(target):
            target = os.path.realpath(target)
        # Compared as text: both are normalised absolute paths.
        if target != self.base and not target.startswith(self.inside):
            raise denied(f"{field}: {rel} resolves outside the download directory (a symlink?)", field=field,
                         path=str(rel))
        return Path(target)


def host_matcher(patterns: Iterable[str]) -> Callable[[str], bool]:
    exact = {p.lower() for p in patterns if not p.startswith("*.")}
    suffixes = tuple(p[1:].lower() for p in patterns if p.startswith("*."))

    def allowed(host: str) -> bool:
        h = host.lower().rstrip(".")
        return h in exact or (bool(suffixes) and h.endswith(suffixes))

    return allowed


def check_url(url: str, allowed: Callable[[str], bool]) -> None:
    # urlsplit, not httpx.URL: signed URLs are long and httpx validates them character by character.
    host = urlsplit(url).hostname or ""
    if not allowed(host):
        raise denied(f"url: host {host} is not on downloads.allowed_hosts", host=host)
