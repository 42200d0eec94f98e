"""Availability facts every family reads: a product's months at a site as a *cell* (release tag
or PROVISIONAL -> ISO month ranges), shaped by the provisional filter and a month window into the
chosen format. eco_get_product's availability rows and summary, eco_get_site's product list and
eco_list_files' window read them too; the availability family itself is families/availability.py.

    cell_from_upstream(available_releases, available_months, release) -> Cell
    parse_cell(cell)                                    -> the cell as month-index intervals
    shape_row(cell, provisional=, start=, end=, fmt=)   -> RowData | None
    shape_intervals(parsed, provisional=, ...)          -> the same from month-index intervals
    totals(rows)                                        -> AvailabilityTotals over every row
    availability_row(data, ...)                         -> eco_get_product's ProductAvailabilityRow
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field

from catalog import months
from catalog.index import Interval, merge
from catalog.resolve import PROVISIONAL
from eco_core.memo import memos
from eco_core.wire import WireModel

# Months NEON lists without saying which release they belong to (never seen in recordings).
UNSPECIFIED = "UNSPECIFIED"

Cell = dict[str, list[str]]
# A cell as month-index intervals per release: what the catalog index holds, what shaping works on.
Parsed = Mapping[str, Sequence[Interval]]
Format = Literal["ranges", "months", "counts"]
Provisional = Literal["include", "exclude", "only"]


class Window(WireModel):
    start_month: str | None = Field(None, description="null: open.")
    end_month: str | None = Field(None, description="null: open.")


class ProductAvailabilityRow(WireModel):
    # One product at one site, as eco_get_product lists it (a comment: a docstring would be
    # repeated in each tool schema using it). eco_get_availability's leaner row is
    # families.availability's AvailabilityRow.

    product_code: str
    product_name: str | None = None
    site_code: str
    site_name: str | None = None
    month_count: int
    provisional_month_count: int
    first_month: str | None
    last_month: str | None
    ranges: list[str] | None = Field(None, description="With format ranges.")
    months: list[str] | None = Field(None, description="With format months.")
    by_release: dict[str, list[str] | int] = Field(
        default_factory=dict, description="Ranges, months or counts per format.")


class AvailabilityTotals(WireModel):
    rows: int = Field(description="Rows with data (all pages).")
    site_months: int = Field(description="Product-site-months over all rows.")
    by_release: dict[str, int] = Field(default_factory=dict)
    first_month: str | None = None
    last_month: str | None = None


@dataclass
class RowData:
    month_count: int
    provisional_month_count: int
    first_month: str | None
    last_month: str | None
    ranges: list[str] | None
    months: list[str] | None
    by_release: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)


def cell_from_upstream(available_releases: list[Any], available_months: list[str], release: str | None) -> Cell:
    """One upstream siteCodes/dataProducts entry as a cell."""
    cell: Cell = {}
    for a in available_releases:
        if a.available_months:
            cell[a.release] = months.to_ranges(a.available_months)
    if not cell and available_months:
        cell[release or UNSPECIFIED] = months.to_ranges(available_months)
    return cell


def parse_cell(cell: Cell) -> Parsed:
    return {rel: _intervals(ranges) for rel, ranges in cell.items()}


def _intervals(ranges: list[str]) -> list[Interval]:
    out = []
    for r in ranges:
        a, _, b = r.partition("/")
        out.append((months.month_index(a), months.month_index(b or a)))
    return out


# Month texts are rendered thousands of times a call (a product at 81 sites) from a few hundred
# distinct months. A pure function of its integer, so never stale; bounded anyway.
_month = lru_cache(maxsize=8192)(months.month_from_index)


def count_months(ivs: Sequence[Interval]) -> int:
    """Months in merged intervals."""
    return sum(b - a + 1 for a, b in ivs)


# A run's merged form, month count and range texts, by run: the index holds each equal run once,
# and product-mode calls shape the same runs again and again.
RUNS_KEPT = 4096
_runs = memos.by_value("availability.runs", max_entries=RUNS_KEPT)


def _run(ivs: tuple[Interval, ...]) -> tuple[tuple[Interval, ...], int, tuple[str, ...]]:
    facts = _runs.get(ivs)
    if facts is None:
        merged = merge(list(ivs))
        merged = ivs if merged == ivs else merged  # most runs are merged already: keep one object
        m = _month
        facts = (merged, count_months(merged), tuple(f"{m(a)}/{m(b)}" for a, b in merged))
        _runs.put(ivs, facts)
    return facts


def _every(ivs: tuple[Interval, ...]) -> list[str]:
    m = _month
    return [m(k) for a, b in ivs for k in range(a, b + 1)]


def shape_row(cell: Cell, *, provisional: Provisional, start: str | None, end: str | None,
              fmt: Format) -> RowData | None:
    """The cell filtered (provisional, window) and rendered; None when nothing is left.
    Works on integer month intervals: a product at 81 sites is thousands of months."""
    return shape_intervals(parse_cell(cell), provisional=provisional, start=start, end=end, fmt=fmt)


def shape_intervals(parsed: Parsed, *, provisional: Provisional, start: str | None,
                    end: str | None, fmt: Format, overall: bool = True) -> RowData | None:
    """`shape_row` of a cell already parsed to month-index intervals (the catalog index holds
    them so, and parsing its ISO texts again would cost more than the shaping). Without `overall`
    the row's own ranges and months (the union of its releases') are left None."""
    lo = months.month_index(start) if start else -1
    hi = months.month_index(end) if end else 10**9
    whole = lo < 0 and hi >= 10**9
    kept: dict[str, tuple[tuple[Interval, ...], int, tuple[str, ...]]] = {}
    for rel in sorted(parsed):
        if (provisional == "exclude" and rel == PROVISIONAL) or (provisional == "only" and rel != PROVISIONAL):
            continue
        ivs = parsed[rel]
        run = tuple(ivs) if whole else tuple((max(a, lo), min(b, hi)) for a, b in ivs if a <= hi and b >= lo)
        if run:
            kept[rel] = _run(run)
    if not kept:
        return None
    every, every_count, every_text = (
        _run(tuple(iv for facts in kept.values() for iv in facts[0])) if len(kept) > 1 else next(iter(kept.values())))
    counts = {rel: facts[1] for rel, facts in kept.items()}
    by_release: dict[str, Any]
    if fmt == "ranges":
        by_release = {rel: list(facts[2]) for rel, facts in kept.items()}
    elif fmt == "months":
        by_release = {rel: _every(facts[0]) for rel, facts in kept.items()}
    else:
        by_release = dict(counts)
    return RowData(
        month_count=every_count,
        provisional_month_count=counts.get(PROVISIONAL, 0),
        first_month=_month(every[0][0]),
        last_month=_month(every[-1][1]),
        ranges=list(every_text) if overall and fmt == "ranges" else None,
        months=_every(every) if overall and fmt == "months" else None,
        by_release=by_release,
        counts=counts,
    )


def totals(rows: list[RowData]) -> AvailabilityTotals:
    by_release: dict[str, int] = {}
    for r in rows:
        for rel, n in r.counts.items():
            by_release[rel] = by_release.get(rel, 0) + n
    firsts = [r.first_month for r in rows if r.first_month]
    lasts = [r.last_month for r in rows if r.last_month]
    return AvailabilityTotals(
        rows=len(rows),
        site_months=sum(r.month_count for r in rows),
        by_release=dict(sorted(by_release.items())),
        first_month=min(firsts, default=None),
        last_month=max(lasts, default=None),
    )


def availability_row(data: RowData, *, product_code: str, product_name: str | None, site_code: str,
                     site_name: str | None) -> ProductAvailabilityRow:
    return ProductAvailabilityRow(
        product_code=product_code, product_name=product_name, site_code=site_code, site_name=site_name,
        month_count=data.month_count, provisional_month_count=data.provisional_month_count,
        first_month=data.first_month, last_month=data.last_month, ranges=data.ranges, months=data.months,
        by_release=data.by_release)
