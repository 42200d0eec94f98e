"""Giving back to the system the memory a finished build used for its scratch.

    release_freed()   after a build: a full collection, then glibc's malloc_trim where there is one

A build (catalog rows, a subtree walk, the index) is a short peak of objects freed as soon as it
ends. glibc keeps the pages they occupied mapped until asked, so without this a serving process
would keep the size of its largest build for good. For the same reason glibc keeps one malloc
arena, set when this module is first imported (before the server starts its threads): each
thread that parses or queries would otherwise get an arena of its own, and what a build freed
in one is not reused by another (the threads take turns on the GIL anyway). Elsewhere (macOS,
musl) only the collection runs: those allocators hand memory back on their own terms.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable
from typing import Any

M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENAS = 1


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


def release_freed() -> None:
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
