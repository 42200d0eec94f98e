"""Which months of which product at which site, by release, from the in-memory index.

    product_availability(product, *, site_codes=None, domain_code=None, release=None,
                         provisional="include", start_month=None, end_month=None, fmt="ranges")
        -> AvailabilityResult(mode="product", rows: one per site)
    site_availability(site, *, product_codes=None, release=None, provisional=..., ...)
        -> AvailabilityResult(mode="site", rows: one per product)
    cell_availability(product, site, *, release=None, provisional=..., fmt="months")
        -> AvailabilityResult(mode="cell", rows: zero or one)

`product`/`site` accept codes or names (catalog.resolve; the resolution is in `resolved`).
Each row's `by_release` maps RELEASE-YYYY tags and PROVISIONAL to the months in `fmt`:
"ranges" (ISO intervals YYYY-MM/YYYY-MM), "months" (every YYYY-MM) or "counts" (an int).
`summary` totals site-months per release over all rows. The window [start_month, end_month]
cuts every per-release list; rows left empty are dropped. Synchronous (see catalog.index).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from catalog import months
from catalog.index import CatalogIndex, Cell, get_index
from catalog.resolve import resolve_product, resolve_release, resolve_site
from eco_core.errors import EcoError

Provisional = Literal["include", "exclude", "only"]
Format = Literal["ranges", "months", "counts"]
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
PROVISIONAL = "PROVISIONAL"


@dataclass
class AvailabilityRow:
    product_code: str
    product_name: str
    site_code: str
    site_name: str | None
    domain_code: str | None
    by_release: dict[str, Any]
    month_count: int
    first_month: str
    last_month: str

    @property
    def month_range(self) -> str:
        return f"{self.first_month}/{self.last_month}"


@dataclass
class AvailabilityResult:
    mode: Literal["product", "site", "cell"]
    rows: list[AvailabilityRow]
    summary: dict[str, int]
    release: str | None
    provisional: Provisional
    window: dict[str, str | None] | None
    format: Format
    resolved: dict[str, Any] = field(default_factory=dict)


def _bad(name: str, message: str) -> EcoError:
    return EcoError("invalid_argument", f"{name}: {message}", details={"field": name})


def _options(idx: CatalogIndex, release, provisional, start_month, end_month, fmt, resolved) -> str | None:
    if provisional not in ("include", "exclude", "only"):
        raise _bad("provisional", "must be include, exclude or only")
    if fmt not in ("ranges", "months", "counts"):
        raise _bad("format", "must be ranges, months or counts")
    for name, value in (("start_month", start_month), ("end_month", end_month)):
        if value is not None and not MONTH.match(value):
            raise _bad(name, f"expected a month YYYY-MM, got {value!r}")
    if start_month and end_month and start_month > end_month:
        raise _bad("start_month", "is after end_month")
    if release is None:
        return None
    if provisional == "only":
        raise _bad("provisional", "only cannot be combined with release")
    r = resolve_release(release, index=idx)
    resolved["release"] = r.echo()
    return r.tag


def _row(idx: CatalogIndex, cell: Cell, rel: str | None, provisional: str, start: str | None, end: str | None,
         fmt: str) -> AvailabilityRow | None:
    kept: dict[str, list[str]] = {}
    for tag, ranges in cell.ranges.items():
        is_prov = tag == PROVISIONAL
        if (is_prov and provisional == "exclude") or (not is_prov and provisional == "only"):
            continue
        if not is_prov and rel is not None and tag != rel:
            continue
        clipped = months.clip(ranges, start, end) if (start or end) else list(ranges)
        if clipped:
            kept[tag] = clipped
    if not kept:
        return None
    firsts = [r.partition("/")[0] for rs in kept.values() for r in rs]
    lasts = [r.partition("/")[2] for rs in kept.values() for r in rs]
    total = len({m for rs in kept.values() for m in months.expand(rs)})
    out: dict[str, Any] = {}
    for tag, rs in kept.items():
        out[tag] = rs if fmt == "ranges" else months.expand(rs) if fmt == "months" else months.count(rs)
    site = idx.site_by_code.get(cell.site_code)
    product = idx.by_code[cell.product_code]
    return AvailabilityRow(product.code, product.name, cell.site_code, site.name if site else None,
                           site.domain_code if site else None, out, total, min(firsts), max(lasts))


def _summary(rows: list[AvailabilityRow], fmt: str) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in rows:
        for tag, value in row.by_release.items():
            n = value if fmt == "counts" else months.count(value) if fmt == "ranges" else len(value)
            totals[tag] = totals.get(tag, 0) + n
    return dict(sorted(totals.items()))


def _result(mode, rows, fmt, rel, provisional, start, end, resolved) -> AvailabilityResult:
    window = {"start": start, "end": end} if (start or end) else None
    return AvailabilityResult(mode, rows, _summary(rows, fmt), rel, provisional, window, fmt, resolved)


def product_availability(
    product: str, *, site_codes: list[str] | None = None, domain_code: str | None = None, release: str | None = None,
    provisional: Provisional = "include", start_month: str | None = None, end_month: str | None = None,
    fmt: Format = "ranges", index: CatalogIndex | None = None,
) -> AvailabilityResult:
    idx = index or get_index()
    rp = resolve_product(product, index=idx)
    p = idx.by_code[rp.code]
    resolved: dict[str, Any] = {"product": rp.echo()}
    rel = _options(idx, release, provisional, start_month, end_month, fmt, resolved)
    wanted = None
    if site_codes:
        wanted = {resolve_site(s, index=idx, field="site_codes").code for s in site_codes}
    domain = domain_code.strip().upper() if domain_code else None
    rows = []
    for code in sorted(p.cells):
        if wanted is not None and code not in wanted:
            continue
        site = idx.site_by_code.get(code)
        if domain and (site is None or site.domain_code != domain):
            continue
        row = _row(idx, p.cells[code], rel, provisional, start_month, end_month, fmt)
        if row is not None:
            rows.append(row)
    return _result("product", rows, fmt, rel, provisional, start_month, end_month, resolved)


def site_availability(
    site: str, *, product_codes: list[str] | None = None, release: str | None = None,
    provisional: Provisional = "include", start_month: str | None = None, end_month: str | None = None,
    fmt: Format = "ranges", index: CatalogIndex | None = None,
) -> AvailabilityResult:
    idx = index or get_index()
    r = resolve_site(site, index=idx)
    resolved: dict[str, Any] = {"site": r.echo()}
    rel = _options(idx, release, provisional, start_month, end_month, fmt, resolved)
    wanted = None
    if product_codes:
        wanted = {resolve_product(c, index=idx, field="product_codes").code for c in product_codes}
    rows = []
    for p in idx.products:
        cell = p.cells.get(r.code)
        if cell is None or (wanted is not None and p.code not in wanted):
            continue
        row = _row(idx, cell, rel, provisional, start_month, end_month, fmt)
        if row is not None:
            rows.append(row)
    return _result("site", rows, fmt, rel, provisional, start_month, end_month, resolved)


def cell_availability(
    product: str, site: str, *, release: str | None = None, provisional: Provisional = "include",
    start_month: str | None = None, end_month: str | None = None, fmt: Format = "months",
    index: CatalogIndex | None = None,
) -> AvailabilityResult:
    idx = index or get_index()
    rp, rs = resolve_product(product, index=idx), resolve_site(site, index=idx)
    resolved: dict[str, Any] = {"product": rp.echo(), "site": rs.echo()}
    rel = _options(idx, release, provisional, start_month, end_month, fmt, resolved)
    cell = idx.by_code[rp.code].cells.get(rs.code)
    row = _row(idx, cell, rel, provisional, start_month, end_month, fmt) if cell else None
    return _result("cell", [row] if row else [], fmt, rel, provisional, start_month, end_month, resolved)
