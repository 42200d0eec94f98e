"""The plan's files onto disk, verified: eco_download_files' transfers.

    await download(client, cfg, plan) -> (files, totals)

Each file streams through the upstream client (`UpstreamClient.stream`) to `<name>.part` beside
its final name, is checked (MD5 for data and prototype files; ZIP integrity for package ZIPs;
the announced length for documents) and only then renamed. A mismatch deletes the partial file
(`checksum_mismatch`). A `.part` left by an interrupted call is continued with a Range request
(the MD5 still covers the whole file) when it is this service's own: a regular file of one link,
owned by the service's user; anything else at that name is removed (by name) and the file
fetched afresh, never written through, and a new `.part` is always created exclusively. A signed
URL that has expired is refreshed by asking NEON for the file again. An existing file identical
to the upstream one is skipped. Transfers run `eco.max_concurrency` at a time, with progress on
stderr for long plans, and every call updates the directory's manifest.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import hashlib
import logging
import os
import stat
import threading
import time
import zipfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field

from downloads import manifest, paths
from downloads.plan import Item, Plan, Selection
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import WireModel
from upstream import context
from upstream.bodies import body_chunks

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

log = logging.getLogger("eco.downloads")

CHUNK = 1 << 20
# O_NOFOLLOW: a symlink put in a .part file's place is never written through; O_EXCL: a new
# .part is a new file, never one someone linked there; O_NONBLOCK: opening a FIFO never waits.
_BASE = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BASE
_REOPEN = os.O_RDWR | os.O_APPEND | getattr(os, "O_NONBLOCK", 0) | _BASE
_EUID = os.geteuid() if hasattr(os, "geteuid") else None
# Errors that mean something in the download directory is in the way, not a bug.
_IN_THE_WAY = (errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG, errno.ELOOP,
               errno.EEXIST)
# At most this many buffers per writev (POSIX guarantees 16; Linux takes 1024).
_IOV = 512
# Body bytes gathered before one write + MD5 batch (see _Sink).
FLUSH_AT = 1 << 20
PROGRESS_EVERY_S = 2.0
Status = Literal["downloaded", "resumed", "skipped", "replaced"]
T = TypeVar("T")


# One file's outcome and the call's totals, as eco_download_files returns them.
class DownloadedFileOut(WireModel):
    path: str = Field(description="Under downloadDir.")
    name: str
    source: Selection
    status: Status
    size: int
    md5: str | None
    verified: bool
    product_code: str | None = None
    site_code: str | None = None
    month: str | None = None
    release: str | None = None
    changed_upstream: bool = Field(False, description="Another MD5 or release than the manifest's.")


class DownloadTotals(WireModel):
    files: int
    downloaded: int
    resumed: int
    skipped: int
    changed_upstream: int
    bytes_transferred: int
    bytes_on_disk: int
    seconds: float
    mb_per_second: float | None


@dataclass
class Progress:
    total_files: int
    total_bytes: int
    started: float = field(default_factory=time.monotonic)
    files_done: int = 0
    bytes: int = 0
    last: float = field(default_factory=time.monotonic)

    def add(self, n: int) -> None:
        self.bytes += n
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            rate = self.bytes / max(now - self.started, 1e-6) / 1e6
            log.info("download progress: %d/%d files, %d/%d bytes, %.1f MB/s", self.files_done, self.total_files,
                     self.bytes, self.total_bytes, rate)


def md5_of(path: Path) -> str:
    h = hashlib.md5()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _identical(target: Path, item: Item) -> bool:
    if not target.is_file():
        return False
    if item.md5:
        return md5_of(target) == item.md5
    if item.exact_size is not None:
        return target.stat().st_size == item.exact_size
    return False


def _write_all(fd: int, chunks: list[bytes | bytearray]) -> None:
    """Every byte of `chunks`, in order, with as few system calls as the kernel allows."""
    writev = getattr(os, "writev", None)
    if writev is None:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
        return
    pending: list[bytes | bytearray | memoryview] = list(chunks)
    while pending:
        n = writev(fd, pending[:_IOV])
        while n:  # drop what was written; a partial write leaves the rest of one buffer
            size = len(pending[0])
            if n < size:
                pending[0] = memoryview(pending[0])[n:]
                break
            n -= size
            pending.pop(0)


def _checksum_error(item: Item, got: str, why: str) -> EcoError:
    return EcoError("checksum_mismatch", f"{item.rel}: {why}; the partial file was removed",
                    details={"path": str(item.rel), "expected": item.md5, "got": got}, retryable=True)


class _PartChanged(Exception):
    """The .part to continue is no longer the one that was checked: start the file afresh."""


def _ours(st: os.stat_result) -> bool:
    """A .part this service may continue: a regular file of one link, owned by the service's user
    (a second link would be written through; another user's file is not ours to extend)."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and (_EUID is None or st.st_uid == _EUID)


def _blocked(rel: str, exc: OSError) -> EcoError:
    return paths.denied(f"{rel}: cannot be written in the download directory ({exc.strerror or exc})",
                        f"Move whatever is at {rel} out of the download directory, or choose another dest_subdir.",
                        path=rel)


def _discard(part: Path, rel: str) -> None:
    """Remove what is at the .part name (the name only: a link's target is never touched)."""
    try:
        part.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _blocked(f"{rel}.part", exc) from None


def _create_part(part: Path, rel: str) -> int:
    """A new, empty .part: created exclusively, so a name someone linked or planted since the
    check is removed (by name) rather than opened."""
    for _ in range(3):
        try:
            return os.open(part, _CREATE, 0o644)
        except FileExistsError:
            _discard(part, rel)
        except OSError as exc:
            if exc.errno in _IN_THE_WAY:
                raise _blocked(f"{rel}.part", exc) from None
            raise
    raise paths.denied(f"{rel}.part: something keeps re-creating it in the download directory",
                       f"Stop whatever writes {rel}.part, then call again.", path=f"{rel}.part")


def _reopen_part(part: Path, offset: int, h: hashlib._Hash) -> int:
    """The .part to continue, opened without following a symlink and checked again on the open
    file (it may have been swapped since it was listed); its bytes go into `h`."""
    try:
        fd = os.open(part, _REOPEN)
    except OSError:
        raise _PartChanged() from None
    try:
        st = os.fstat(fd)
        if not _ours(st) or st.st_size != offset:
            raise _PartChanged()
        done = 0
        while done < offset:
            block = os.pread(fd, min(CHUNK, offset - done), done)
            if not block:
                raise _PartChanged()
            h.update(block)
            done += len(block)
        return fd
    except BaseException:
        os.close(fd)
        raise


class _Lane:
    """The disk jobs of one call (writes, MD5, checks, renames), on at most `width` worker
    threads. A thread that finishes a job takes the next one queued instead of going back to the
    pool, so files that finish close together (most are small) share one thread hop, and no more
    threads than there are cores take turns with the event loop for them: MD5 is CPU work, and a
    hasher beyond the cores only slows the loop that reads the sockets."""

    def __init__(self, width: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.width = max(1, width)
        self.jobs: deque[tuple[contextvars.Context, Callable[[], Any], asyncio.Future[Any]]] = deque()
        self.lock = threading.Lock()
        self.running = 0

    def run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        done: asyncio.Future[T] = self.loop.create_future()
        with self.lock:
            self.jobs.append((contextvars.copy_context(), fn, done))
            start = self.running < self.width
            if start:
                self.running += 1
        if start:
            try:
                self.loop.run_in_executor(None, self._work)
            except RuntimeError:  # the executor has shut down (the loop is closing)
                with self.lock:
                    self.running -= 1
                raise
        return done

    def _work(self) -> None:
        while True:
            with self.lock:
                if not self.jobs:
                    self.running -= 1
                    return
                ctx, fn, done = self.jobs.popleft()
            try:
                outcome: tuple[Any, BaseException | None] = (ctx.run(fn), None)
            except Exception as exc:
                outcome = (None, exc)
            try:
                self.loop.call_soon_threadsafe(_settle, done, *outcome)
            except RuntimeError:  # the loop has closed: nobody waits for this job any more
                pass


def _settle(done: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if done.cancelled():
        return
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(result)


class _Sink:
    """A .part file and its MD5, fed the body as it arrives. Every file-system step and the MD5
    run on a worker thread (both release the GIL) while the loop keeps reading sockets. Chunks
    gather to FLUSH_AT bytes; a full batch is written and hashed while the next arrives, at most
    one batch in flight per file. A batch goes to the thread as the chunks that arrived, never
    joined into one buffer (a copy of every body byte on the loop thread): the thread hashes them
    one by one and writes them with one writev. The last batch, the close, the checks and the
    rename are one job on the call's _Lane: most data files are a single batch, so a file costs
    one job at most, and no hop at all when a lane thread is still busy with the file before."""

    def __init__(self, part: Path, h: hashlib._Hash, lane: _Lane, fd: int | None = None, rel: str = "") -> None:
        """`fd`: a .part being continued (its bytes already in `h`); else a new one is created."""
        self.part, self.h, self.lane, self.fd = part, h, lane, fd
        self.rel = rel or part.name.removesuffix(".part")
        self.buf: list[bytes | bytearray] = []
        self.held = 0
        self.pending: asyncio.Future[None] | None = None
        self.done = False
        self.last: threading.Event | None = None

    def _job(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """fn on the lane, after this file's previous job has ended: a call cancelled while a
        batch was being written still closes the file after that batch, never beside it."""
        before, mine = self.last, threading.Event()
        self.last = mine

        def job() -> T:
            try:
                if before is not None:
                    before.wait()  # already running or done: the lane takes jobs in order
                return fn()
            finally:
                mine.set()

        return self.lane.run(job)

    def _put(self, chunks: list[bytes | bytearray]) -> None:
        # os.open, not open(): a file object adds fstat, isatty and lseek calls, and each call
        # into the kernel hands the GIL back and forth with the loop.
        if self.fd is None:
            self.fd = _create_part(self.part, self.rel)
        update = self.h.update
        for chunk in chunks:
            update(chunk)
        if chunks:
            _write_all(self.fd, chunks)

    def _put_and_close(self, chunks: list[bytes | bytearray]) -> None:
        try:
            self._put(chunks)
        finally:
            if self.fd is not None:
                os.close(self.fd)

    def add(self, chunk: bytes | bytearray) -> bool:
        """Hold `chunk`; True when a batch is due (then `await spill()`)."""
        if chunk:
            self.buf.append(chunk)
            self.held += len(chunk)
        return self.held >= FLUSH_AT

    def _take(self) -> list[bytes | bytearray]:
        chunks = self.buf
        self.buf, self.held = [], 0
        return chunks

    async def spill(self) -> None:
        await self._drain()
        chunks = self._take()
        self.pending = self._job(lambda: self._put(chunks))

    async def _drain(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            await pending

    async def complete(self, check: Callable[[str], None]) -> str:
        """Write the rest, close, then `check(md5)` (which verifies and renames), on one thread hop."""
        await self._drain()
        chunks = self._take()
        self.done = True

        def job() -> str:
            self._put_and_close(chunks)
            digest = self.h.hexdigest()
            check(digest)
            return digest

        return await self._job(job)

    async def close(self) -> None:
        """After an early end: what arrived is a prefix the next call resumes from."""
        if self.done:
            return
        self.done = True
        try:
            await self._drain()
        finally:
            chunks = self._take()
            if chunks or self.fd is not None:
                await self._job(lambda: self._put_and_close(chunks))


class _Slot:
    """One transfer's hold on one of eco.max_concurrency transfer slots, given back as soon as its
    body has arrived: writing, hashing and renaming it need no connection."""

    def __init__(self, sem: asyncio.Semaphore) -> None:
        self.sem, self.held = sem, False

    async def __aenter__(self) -> _Slot:
        await self.sem.acquire()
        self.held = True
        return self

    def release(self) -> None:
        if self.held:
            self.held = False
            self.sem.release()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


class Transfer:
    def __init__(self, client: UpstreamClient, cfg: EcoConfig, plan: Plan, progress: Progress) -> None:
        self.client, self.cfg, self.plan, self.progress = client, cfg, plan, progress
        self.allowed = paths.host_matcher(cfg.downloads.allowed_hosts)
        self.slots = asyncio.Semaphore(cfg.eco.max_concurrency)
        # Bodies that have arrived and wait for their last write: bounded, so a slow disk holds
        # the transfers back instead of piling up FLUSH_AT bytes per finished file in memory.
        self.finishing = asyncio.Semaphore(cfg.eco.max_concurrency)
        # The plan's confiner: its directories are resolved and listed already.
        self.confine = plan.confiner
        self.created: list[Path] = []
        self.present: set[Path] = set()
        self.lane = _Lane(min(cfg.eco.max_concurrency, os.cpu_count() or 1))

    def _mkdirs(self, directory: Path) -> None:
        """One mkdir per directory (its parents first when they are missing too), no stat."""
        if directory in self.present:
            return
        try:
            directory.mkdir()
        except FileExistsError:
            pass  # a file in its place since the plan was checked: creating the .part says so
        except FileNotFoundError:
            self._mkdirs(directory.parent)
            directory.mkdir()
            self.created.append(directory)
        except OSError as exc:
            if exc.errno not in _IN_THE_WAY:
                raise
            raise _blocked(self._shown(directory), exc) from None
        else:
            self.created.append(directory)
        self.present.add(directory)

    def _shown(self, path: Path) -> str:
        """`path` as the caller knows it: relative to the download directory."""
        return os.path.relpath(path, self.confine.base)

    def remove_empty_dirs(self) -> None:
        """Directories this call made and left empty (a refused or failed transfer) go again."""
        for d in reversed(self.created):
            try:
                d.rmdir()
            except OSError:
                pass

    async def one(self, item: Item, old: dict | None) -> DownloadedFileOut:
        async with _Slot(self.slots) as slot:
            return await self._one(item, old, slot)

    async def _one(self, item: Item, old: dict | None, slot: _Slot) -> DownloadedFileOut:
        target = self.confine(item.rel, None)
        changed = manifest.changed(old, item.md5, item.release)
        out = dict(path=str(item.rel), name=item.name, source=item.source, md5=item.md5, product_code=item.product,
                   site_code=item.site, month=item.month, release=item.release, changed_upstream=changed)
        # What is on disk comes from the plan's listing of the directory: no stat per file.
        existed = self.confine.entry(target) is not None
        if existed and await self.lane.run(lambda: _identical(target, item)):
            self.progress.files_done += 1
            return DownloadedFileOut(**out, status="skipped", size=target.stat().st_size, verified=True)
        part = target.with_name(target.name + ".part")
        rel = str(item.rel)
        offset = 0
        held = self.confine.entry(part)
        if held is not None:
            try:
                st: os.stat_result | None = held.stat(follow_symlinks=False)
            except FileNotFoundError:  # gone since the directory was listed
                st = None
            if st is not None and _ours(st):
                offset = st.st_size
            elif st is not None:
                # Not a transfer of ours to continue (a symlink, a second link, another user's):
                # its name goes, nothing is written through it, and the file comes afresh.
                await self.lane.run(lambda: _discard(part, rel))
        if item.exact_size is not None and offset > item.exact_size:
            await self.lane.run(lambda: _discard(part, rel))
            offset = 0
        url = item.url
        refreshed = False
        while True:
            try:
                size, digest, resumed = await self._stream(item, url, target, part, offset, slot)
                break
            except _PartChanged:
                # Swapped between the listing and the open: start again from nothing (once at
                # most: a transfer from offset 0 never continues a .part).
                await self.lane.run(lambda: _discard(part, rel))
                offset = 0
            except EcoError as exc:
                upstream_status = exc.details.get("upstreamStatus")
                if upstream_status == 416 and offset:
                    await self.lane.run(lambda: _discard(part, rel))  # not a prefix of this file any more
                    offset = 0
                    continue
                if (not refreshed and upstream_status in (400, 403) and item.source == "data"
                        and item.product):
                    # An expired (or otherwise refused) signed URL: ask NEON for the file again.
                    assert item.site and item.month
                    refreshed = True
                    url = await self.client.data_file_url(item.product, item.site, item.month, item.name)
                    paths.check_url(url, self.allowed)
                    continue
                raise
        self.progress.files_done += 1
        done: Status = "replaced" if existed else "resumed" if resumed else "downloaded"
        return DownloadedFileOut(**{**out, "md5": item.md5 or digest}, status=done, size=size, verified=True)

    async def _stream(self, item: Item, url: str, target: Path, part: Path, offset: int,
                      slot: _Slot) -> tuple[int, str, bool]:
        headers = {"Range": f"bytes={offset}-"} if offset else None
        # The token goes with ZIPs and documents (NEON's own routes); signed storage URLs get none.
        async with self.client.stream(url, token_only=item.token_only, headers=headers,
                                      host_allowed=self.allowed) as resp:
            h = hashlib.md5()
            resumed = bool(offset) and resp.status_code == 206
            limit = self.cfg.downloads.max_file_bytes
            self._mkdirs(target.parent)
            fd = await self.lane.run(lambda: _reopen_part(part, offset, h)) if resumed else None
            size = offset if resumed else 0
            sink = _Sink(part, h, self.lane, fd, str(item.rel))
            progress = self.progress
            try:
                # A body that breaks off leaves its .part: the next call continues it with a Range.
                async for chunk in body_chunks(resp):
                    size += len(chunk)
                    if size > limit:
                        raise EcoError("download_limit_exceeded", f"{item.rel}: larger than {limit} bytes",
                                       details={"path": str(item.rel), "maxFileBytes": limit})
                    if sink.add(chunk):
                        await sink.spill()
                    progress.add(len(chunk))
                announced = resp.headers.get("content-length")
                if announced is not None and announced.isdigit() and size - (offset if resumed else 0) != int(announced):
                    raise EcoError("upstream_unavailable", f"{item.rel}: transfer ended early; call again to resume",
                                   details={"path": str(item.rel)}, retryable=True)
                async with self.finishing:
                    slot.release()
                    digest = await sink.complete(lambda got: self._finish(item, part, target, size, got))
            finally:
                await sink.close()
            return size, digest, resumed

    def _finish(self, item: Item, part: Path, target: Path, size: int, digest: str) -> None:
        """On a worker thread, after the .part file is closed."""
        self._verify(item, part, size, digest)
        try:
            os.replace(part, target)
        except OSError as exc:  # a directory put in the file's place since the plan was checked
            if exc.errno not in _IN_THE_WAY:
                raise
            raise _blocked(str(item.rel), exc) from None

    def _verify(self, item: Item, part: Path, size: int, digest: str) -> None:
        if not self.cfg.downloads.verify_checksums:
            return
        if item.md5 and digest != item.md5:
            part.unlink(missing_ok=True)
            raise _checksum_error(item, digest, "MD5 differs from the upstream's")
        if item.exact_size is not None and size != item.exact_size:
            part.unlink(missing_ok=True)
            raise _checksum_error(item, digest, f"{size} bytes, upstream lists {item.exact_size}")
        if item.source == "zip":
            try:
                with zipfile.ZipFile(part) as zf:
                    bad = zf.testzip()
            except zipfile.BadZipFile:
                bad = "(not a ZIP)"
            if bad is not None:
                part.unlink(missing_ok=True)
                raise _checksum_error(item, digest, f"ZIP member {bad} fails its CRC")


async def download(client: UpstreamClient, cfg: EcoConfig, plan: Plan) -> tuple[list[DownloadedFileOut], DownloadTotals]:
    """Every file of the checked plan, with the call's totals; the manifest's note, if any, goes
    to `plan.notes`. A failed transfer fails the call (the first EcoError, with counts) after the
    others have ended and the manifest records what did arrive."""
    acct = context.current()
    if acct is not None:
        # A plan of up to 2 GiB cannot fit the per-call upstream deadline; each transfer is bounded
        # by eco.download_read_timeout_s between bytes instead.
        acct.deadline_at = None
    progress = Progress(len(plan.items), plan.bytes)
    started = time.monotonic()
    transfer = Transfer(client, cfg, plan, progress)
    known = manifest.load(plan.root)
    results = await asyncio.gather(*(transfer.one(i, known.get(str(i.rel))) for i in plan.items),
                                   return_exceptions=True)
    done = [r for r in results if isinstance(r, DownloadedFileOut)]
    by_path = {str(i.rel): i for i in plan.items}
    # A skipped file is recorded again when the manifest did not know it, or knew it under
    # another MD5 or release (the bytes are the same; the release they belong to moved on).
    note = manifest.update(plan.root, {r.path: _entry(by_path[r.path], r) for r in done if r.status != "skipped"
                                       or r.path not in known or r.changed_upstream})
    if note:
        plan.notes.append(note)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        transfer.remove_empty_dirs()
        first = next((e for e in failed if isinstance(e, EcoError)), None)
        if first is None:
            raise failed[0]
        first.details.setdefault("completed", len(done))
        first.details.setdefault("failed", len(failed))
        raise first
    seconds = time.monotonic() - started
    moved = progress.bytes
    totals = DownloadTotals(
        files=len(done), downloaded=sum(r.status in ("downloaded", "replaced") for r in done),
        resumed=sum(r.status == "resumed" for r in done), skipped=sum(r.status == "skipped" for r in done),
        changed_upstream=sum(r.changed_upstream for r in done), bytes_transferred=moved,
        bytes_on_disk=sum(r.size for r in done), seconds=round(seconds, 3),
        mb_per_second=round(moved / seconds / 1e6, 2) if moved and seconds > 0 else None)
    if len(plan.items) >= 10:
        log.info("download finished: %d files, %d bytes in %.1f s", len(done), moved, seconds)
    return done, totals


def _entry(item: Item, r: DownloadedFileOut) -> dict:
    return {"path": r.path, "size": r.size, "md5": r.md5, "source": item.source, "product": item.product,
            "site": item.site, "month": item.month, "release": item.release, "doi": item.doi,
            "citation": item.citation, "fetchedAt": manifest.now()}
