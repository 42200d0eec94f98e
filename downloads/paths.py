"""Where a download may land and where it may come from.

Every destination resolves inside the download directory: the sub-directory a caller names is
relative with no `..`, no name longer than the file system allows and not the manifest's; file
names are plain names; the resolved path (symlinks followed) must stay under the resolved
download directory, and nothing already there may be in the way (a file where a directory must
go, a directory where a file must go). Every URL's host, and every redirect hop's, must be on
`downloads.allowed_hosts` ('*.' matches any subdomain). Each refusal is `download_denied`,
raised before anything is written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from downloads.manifest import NAME as MANIFEST
from eco_core.errors import EcoError

# What POSIX promises when the file system will not say.
NAME_MAX, PATH_MAX = 255, 4096
SUBDIR_HINT = "Choose another dest_subdir: a relative path of plain names inside the download directory."


def denied(message: str, hint: str | None = None, **details: object) -> EcoError:
    return EcoError("download_denied", message, details=dict(details), hint=hint)


def limits(root: Path) -> tuple[int, int]:
    """The longest file name (bytes) and path the file system under `root` takes."""
    probe = os.path.abspath(root)
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    try:
        return os.pathconf(probe, "PC_NAME_MAX"), os.pathconf(probe, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return NAME_MAX, PATH_MAX


def name_bytes(value: str, field: str) -> bytes:
    """`value` as the file system gets it (a name's length limit counts these bytes)."""
    try:
        return os.fsencode(value)
    except UnicodeError:  # a lone surrogate: no file system name
        raise denied(f"{field}: not a valid file name (unpaired surrogate)", SUBDIR_HINT, field=field) from None


def subdir(value: str | None, field: str = "dest_subdir", name_max: int = NAME_MAX) -> PurePosixPath:
    """A caller's sub-directory, checked as text (before any request)."""
    if value is None or value.strip() in ("", "."):
        return PurePosixPath()
    if "\x00" in value or "\\" in value:
        raise denied(f"{field}: must be a relative path with '/' separators", SUBDIR_HINT, field=field)
    p = PurePosixPath(value)
    if p.is_absolute() or value.startswith("~"):
        raise denied(f"{field}: must be relative to the download directory, got an absolute path", SUBDIR_HINT,
                     field=field)
    if any(part == ".." for part in p.parts):
        raise denied(f"{field}: '..' would leave the download directory", SUBDIR_HINT, field=field)
    for part in p.parts:
        size = len(name_bytes(part, field))
        if size > name_max:
            raise denied(f"{field}: a name of {size} bytes ({part[:20]}...), longer than the {name_max} bytes "
                         "this file system allows", f"Shorten each part of dest_subdir to at most {name_max} bytes.",
                         field=field, nameMax=name_max)
    # The manifest (and its temporary files) live at the top: a directory of that name would
    # stand where every later call writes the manifest. Compared without case (case-insensitive
    # file systems).
    top = p.parts[0].casefold()
    if top == MANIFEST.casefold() or top.startswith(f".{MANIFEST}.".casefold()):
        raise denied(f"{field}: {p.parts[0]} is the name of the download directory's manifest",
                     "Choose another dest_subdir (any name but the manifest's).", field=field)
    return p


def plain_name(name: str, field: str = "file name") -> str:
    """A file name with no directory part (upstream names are not trusted to be plain)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise denied(f"{field}: {name!r} is not a plain file name", field=field)
    return name


def confine(root: Path, rel: PurePosixPath, field: str | None = "dest_subdir") -> Path:
    """root/rel, refused unless it resolves (symlinks followed) inside root."""
    return Confiner(root)(rel, field)


class _Looked:
    """What one lstat found, where a directory could not be listed: the DirEntry methods the
    downloads use, answered as lstat saw the name (never followed)."""

    def __init__(self, st: os.stat_result) -> None:
        self._st = st

    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self._st.st_mode)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISREG(self._st.st_mode)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return stat.S_ISDIR(self._st.st_mode)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._st


Entry = os.DirEntry[str] | _Looked


def kind(mode: int) -> str:
    """A file's kind in words, for messages."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "special file"


def _prefix(field: str | None) -> str:
    return f"{field}: " if field else ""


def in_the_way(shown: str, what: str, wanted: str, field: str | None = None) -> EcoError:
    details: dict[str, object] = {"path": shown}
    if field:
        details["field"] = field
    return denied(f"{_prefix(field)}{shown} in the download directory is a {what}, where a {wanted} must go",
                  f"Move {shown} out of the download directory, or choose another dest_subdir.", **details)


class Confiner:
    """confine() for the many files of one plan, and what is already on disk at each destination.

    Each directory is resolved once and listed once: a listing (one scandir) gives every name in
    the directory and whether it is a symlink or a directory, from the directory entries, with no
    stat per name; a directory that is not there needs no call at all, nor do the directories
    below it. Only a name that is a symlink is resolved in full (realpath) and checked. Every
    directory on the way must be a directory (or not there yet): a file in its place is refused
    by name instead of failing the transfer later. The listing is taken when a directory is first
    met, before anything is written; `entry()` answers from it."""

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

    def _look(self, real_parent: str, name: str) -> Entry | None:
        """What is at real_parent/name, not followed: from the parent's listing, else one lstat."""
        entries = self._list(real_parent)
        if real_parent in self.listed:
            return entries.get(name) if entries is not None else None
        try:
            return _Looked(os.lstat(os.path.join(real_parent, name)))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _real(self, real_parent: str, name: str, found: Entry | None) -> str:
        """The real path of real_parent/name: the name is resolved only when it is a symlink."""
        path = os.path.join(real_parent, name)
        if name in ("", ".", ".."):
            return os.path.realpath(path)
        return os.path.realpath(path) if found is not None and found.is_symlink() else path

    def _confined(self, real: str, rel: str, field: str | None) -> str:
        # Compared as text: both are normalised absolute paths.
        if real != self.base and not real.startswith(self.inside):
            raise denied(f"{_prefix(field)}{rel} resolves outside the download directory (a symlink?)",
                         SUBDIR_HINT, **({"field": field} if field else {}), path=rel)
        return real

    def _dir(self, rel_dir: str, field: str | None) -> str:
        real = self.dirs.get(rel_dir)
        if real is not None:
            return real
        if not rel_dir:
            real = self.base
            if os.path.lexists(real) and not os.path.isdir(real):
                raise denied(f"the download directory {real} is not a directory",
                             "Set downloads.directory to a directory.", setting="downloads.directory")
        else:
            up, _, name = rel_dir.rpartition("/")
            above = self._dir(up, field)
            found = self._look(above, name)
            real = self._confined(self._real(above, name, found), rel_dir, field)
            if found is not None:
                if found.is_symlink():
                    # A symlink to a directory inside is followed; one that leads nowhere yet
                    # makes its directory where it points.
                    if os.path.lexists(real) and not os.path.isdir(real):
                        raise in_the_way(rel_dir, "symlink to something not a directory", "directory", field)
                elif not found.is_dir(follow_symlinks=False):
                    raise in_the_way(rel_dir, kind(found.stat(follow_symlinks=False).st_mode), "directory", field)
            if above in self.listed and self.listed[above] is None:
                self.listed.setdefault(real, None)  # below a directory that is not there
        self.dirs[rel_dir] = real
        return real

    def directory(self, rel: PurePosixPath, field: str | None = "dest_subdir") -> Path:
        """root/rel as a directory: inside root, and every part of it a directory or not there yet."""
        return Path(self._dir("/".join(rel.parts), field))

    def __call__(self, rel: PurePosixPath, field: str | None = "dest_subdir") -> Path:
        parent, _, name = str(rel).rpartition("/")
        if str(rel) == ".":
            parent, name = "", ""
        real_dir = self._dir(parent, field)
        target = self._real(real_dir, name, self._look(real_dir, name)) if name else real_dir
        return Path(self._confined(target, str(rel), field))

    def file_place(self, rel: PurePosixPath, target: Path) -> None:
        """Refused when a directory stands where the file, or its .part, must go."""
        for path, shown in ((target, str(rel)), (target.with_name(target.name + ".part"), f"{rel}.part")):
            found = self.entry(path)
            if found is not None and found.is_dir(follow_symlinks=False):
                raise in_the_way(shown, "directory", "file")

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
        raise denied(f"url: host {host} is not on downloads.allowed_hosts", "To trust it, add it to the setting downloads.allowed_hosts (ECO_MCP_DOWNLOADS__ALLOWED_HOSTS).", host=host)
