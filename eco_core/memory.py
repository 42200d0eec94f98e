"""Giving back to the system the memory a finished build used for its scratch.

    release_freed()   after a build: a full collection, then glibc's malloc_trim where there is one

A build (catalog rows, a subtree walk, the index) is a short peak of objects freed as soon as it
ends. glibc keeps the pages they occupied mapped until asked, so without this a serving process
would keep the size of its largest build for good. For the same reason glibc keeps one malloc
arena, set when this module is first imported (before the server starts its threads): each
thread that parses or queries would otherwise get an arena of its own, and what a build freed
in one is not reused by another (the threads take turns on the GIL anyway); and it keeps its
large-block and trim thresholds where they start (TRIM_THRESHOLD below). Elsewhere (macOS,
musl) only the collection runs: those allocators hand memory back on their own terms.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable
from typing import Any

M_ARENA_MAX = -8  # glibc's mallopt parameter numbers
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
ARENAS = 1
# Fixed: glibc raises both by itself after the first large block it frees (up to 32 MB), and from
# then on serves blocks that large from its heap and keeps the heap's free top. Fixed, a large
# block (a reply's body, a parse's buffers) gets pages of its own, given back when it is freed,
# and a free top past this size is given back at once (bench_worker_memory: way B 147.5 -> 144.3 MB).
TRIM_THRESHOLD = MMAP_THRESHOLD = 256 * 1024


def _libc() -> Any | None:
    try:
        # dlopen(NULL): the symbols the process already has, libc's among them; no library search.
        libc = ctypes.CDLL(None)
        libc.malloc_trim, libc.mallopt  # noqa: B018  (glibc only: AttributeError elsewhere)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_TRIM: Callable[[int], int] | None = _LIBC.malloc_trim if _LIBC is not None else None
if _LIBC is not None:
    _LIBC.mallopt(M_ARENA_MAX, ARENAS)
    _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    _LIBC.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def release_freed() -> None:
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
