"""Month arithmetic on `YYYY-MM` strings and the compact interval form `YYYY-MM/YYYY-MM`."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A month as callers write it; the tools' input schemas declare the same pattern. [0-9], not \d:
# pydantic's and Python's \d also match other scripts' digits ("२०२३-01" read as 2023-01), while the
# published schema is read with ECMA-262's \d, ASCII digits only, by every JSON Schema client.
MONTH_PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"
MONTH = re.compile(MONTH_PATTERN)


def month_index(ym: str) -> int:
    return int(ym[:4]) * 12 + int(ym[5:7]) - 1


def month_from_index(k: int) -> str:
    return f"{k // 12:04d}-{k % 12 + 1:02d}"


def to_ranges(months: Iterable[str]) -> list[str]:
    """Consecutive months folded into ISO intervals: ['2020-01/2020-03', '2020-05/2020-05']."""
    idx = sorted({month_index(m) for m in months})
    out: list[str] = []
    start: int | None = None
    prev = 0  # set together with start; only read once start is set
    for k in idx:
        if start is None:
            start = prev = k
        elif k == prev + 1:
            prev = k
        else:
            out.append(f"{month_from_index(start)}/{month_from_index(prev)}")
            start = prev = k
    if start is not None:
        out.append(f"{month_from_index(start)}/{month_from_index(prev)}")
    return out


def expand(ranges: Iterable[str]) -> list[str]:
    out: list[str] = []
    for r in ranges:
        a, _, b = r.partition("/")
        out.extend(month_from_index(k) for k in range(month_index(a), month_index(b or a) + 1))
    return out


def count(ranges: Iterable[str]) -> int:
    total = 0
    for r in ranges:
        a, _, b = r.partition("/")
        total += month_index(b or a) - month_index(a) + 1
    return total


def overlaps(ranges: Iterable[str], start: str | None, end: str | None) -> bool:
    """Whether any interval touches the window [start, end] (either end open)."""
    lo = month_index(start) if start else -1
    hi = month_index(end) if end else 10**9
    for r in ranges:
        a, _, b = r.partition("/")
        if month_index(a) <= hi and month_index(b or a) >= lo:
            return True
    return False


def clip(ranges: Iterable[str], start: str | None, end: str | None) -> list[str]:
    """The intervals cut to the window [start, end]."""
    lo = month_index(start) if start else -1
    hi = month_index(end) if end else 10**9
    out = []
    for r in ranges:
        a, _, b = r.partition("/")
        ka, kb = max(month_index(a), lo), min(month_index(b or a), hi)
        if ka <= kb:
            out.append(f"{month_from_index(ka)}/{month_from_index(kb)}")
    return out
