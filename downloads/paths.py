"""Where a download may land and where it may come from.

Every destination resolves inside the download directory: the sub-directory a caller names is
relative with no `..`, file names are plain names, and the resolved path (symlinks followed)
must stay under the resolved download directory. Every URL's host, and every redirect hop's,
must be on `downloads.allowed_hosts` ('*.' matches any subdomain). Each refusal is
`download_denied`, raised before anything is written.
"""

from __future__ import annotations

import os
import stat
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


class _Looked:
    """What one lstat found, where a directory could not be listed: the DirEntry methods the
    downloads use."""

    def __init__(self, st: os.stat_result) -> None:
        self._st = st

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._st.st_mode)

    def is_file(self) -> bool:
        return stat.S_ISREG(self._st.st_mode)

    def stat(self) -> os.stat_result:
        return self._st


Entry = os.DirEntry[str] | _Looked


class Confiner:
    """confine() for the many files of one plan, and what is already on disk at each destination.

    Each directory is resolved once and listed once: a listing (one scandir) gives every name in
    the directory and whether it is a symlink, from the directory entries, with no stat per name;
    a directory that is not there needs no call at all, nor do the directories below it. Only a
    name that is a symlink is resolved in full (realpath) and checked. The listing is taken when
    a directory is first met, before anything is written; `entry()` answers from it."""

    def __init__(self, root: Path) -> None:
        self.base = os.path.realpath(root)
        self.inside = self.base.rstrip("/") + "/"
        # relative directory -> its real path; real path -> its entries (None: not there).
        self.dirs: dict[str, str] = {}
        self.listed: dict[str, dict[str, os.DirEntry[str]] | None] = {}

    def _list(self, real: str) -> dict[str, os.DirEntry[str]] | None:
        if real in self.listed:
            return self.listed[real]
        got: dict[str, os.DirEntry[str]] | None
        try:
            with os.scandir(real) as it:
                got = {e.name: e for e in it}
        except (FileNotFoundError, NotADirectoryError):
            got = None
        except OSError:
            return None  # not listable (permissions): entry() looks name by name
        self.listed[real] = got
        return got

    def _real(self, real_parent: str, name: str) -> str:
        """The real path of real_parent/name: the name is resolved only when it is a symlink."""
        path = os.path.join(real_parent, name)
        if name in ("", ".", ".."):
            return os.path.realpath(path)
        entries = self._list(real_parent)
        if real_parent in self.listed:
            found = entries.get(name) if entries is not None else None
            return os.path.realpath(path) if found is not None and found.is_symlink() else path
        return os.path.realpath(path) if os.path.islink(path) else path  # not listable: one lstat

    def _dir(self, rel_dir: str) -> str:
        real = self.dirs.get(rel_dir)
        if real is None:
            if not rel_dir:
                real = self.base
            else:
                up, _, name = rel_dir.rpartition("/")
                above = self._dir(up)
                real = self._real(above, name)
                if above in self.listed and self.listed[above] is None:
                    self.listed.setdefault(real, None)  # below a directory that is not there
            self.dirs[rel_dir] = real
        return real

    def __call__(self, rel: PurePosixPath, field: str = "dest_subdir") -> Path:
        parent, _, name = str(rel).rpartition("/")
        if str(rel) == ".":
            parent, name = "", ""
        real_dir = self._dir(parent)
        target = self._real(real_dir, name) if name else real_dir
        # Compared as text: both are normalised absolute paths.
        if target != self.base and not target.startswith(self.inside):
            raise denied(f"{field}: {rel} resolves outside the download directory (a symlink?)", field=field,
                         path=str(rel))
        return Path(target)

    def entry(self, path: Path | str) -> Entry | None:
        """What was at `path` (a path this confiner returned, or a name beside one) when its
        directory was listed: its entry, or None. Symlinks are not followed."""
        directory, name = os.path.split(str(path))
        if directory in self.listed:
            entries = self.listed[directory]
            return entries.get(name) if entries is not None else None
        try:  # a destination a symlink led to, in a directory not listed
            return _Looked(os.lstat(path))
        except (FileNotFoundError, NotADirectoryError):
            return None


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
