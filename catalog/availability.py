"""The availability family's reads (eco_get_availability): which months of a product exist at a
site, split by release, and the wire types of its answer.

The unit everything works on is a *cell*: release tag (or PROVISIONAL) -> ISO month ranges,
for one product at one site. Cells come from the catalog (current view, no upstream request)
or, for a pinned release, from the upstream product or site record as published in that
release (one cached request). `shape_row` then applies the provisional filter and the month
window locally and renders the chosen format.

    await get_availability(idx=, client=, product=, site=, ...) -> Answer[AvailabilityRecord]
    await product_cells(idx, code, release=, client=)  -> {siteCode: index cell or parsed cell}
    await site_cells(idx, code, release=, client=)     -> {productCode: (title, index cell or parsed cell)}
    shape_row(cell, provisional=, start=, end=, fmt=)   -> RowData | None
    shape_intervals(parsed, provisional=, ...)          -> the same from month-index intervals
    totals(rows)                                        -> AvailabilityTotals over every row

eco_get_availability's rows (AvailabilityCell here; catalog.availability_cell names the class
AvailabilityRow, as the spec names the type, for its tool schema) carry each month once: in
`byRelease`, not again as an overall list beside it, and not the names the answer's top level already gives (a
product's 47 sites repeated its name 47 times). eco_get_product's `availabilityRows` keep the
fuller AvailabilityRow (its own surface, shaped by shape_row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog import months, resolve
from catalog.availability_cell import AvailabilityRow as AvailabilityCell
from catalog.checks import bad
from catalog.index import CatalogIndex, Interval, merge
from catalog.index import Cell as IndexCell
from catalog.resolve import PROVISIONAL
from eco_core.wire import Answer, Page, WireModel, page

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

# Months NEON lists without saying which release they belong to (never seen in recordings).
UNSPECIFIED = "UNSPECIFIED"

Cell = dict[str, list[str]]
# A cell as month-index intervals per release: what the catalog index holds, what shaping works on.
Parsed = Mapping[str, Sequence[Interval]]
Format = Literal["ranges", "months", "counts"]
Provisional = Literal["include", "exclude", "only"]
Mode = Literal["product", "site", "cell"]


class Window(WireModel):
    start_month: str | None = Field(None, description="YYYY-MM; null: open.")
    end_month: str | None = Field(None, description="YYYY-MM; null: open.")


class AvailabilityRow(WireModel):
    # One product at one site (a comment: a docstring would be repeated in each tool schema using it).

    product_code: str
    product_name: str | None = None
    site_code: str
    site_name: str | None = None
    month_count: int
    provisional_month_count: int
    first_month: str | None
    last_month: str | None
    ranges: list[str] | None = Field(None, description="YYYY-MM/YYYY-MM intervals (ranges format).")
    months: list[str] | None = Field(None, description="Every month (months format).")
    by_release: dict[str, list[str] | int] = Field(
        default_factory=dict, description="Ranges, months or counts (per format) per release; PROVISIONAL too.")


class AvailabilityTotals(WireModel):
    rows: int = Field(description="Rows with data (all pages).")
    site_months: int = Field(description="Product-site-months over all rows.")
    by_release: dict[str, int] = Field(default_factory=dict, description="Per release, PROVISIONAL too.")
    first_month: str | None = None
    last_month: str | None = None


class AvailabilityRecord(WireModel):
    """eco_get_availability's answer without the envelope (the tool's output adds it)."""

    mode: Mode
    product_code: str | None
    product_name: str | None
    site_code: str | None
    site_name: str | None
    release: str | None
    provisional: Provisional
    window: Window | None
    format: Format
    summary: AvailabilityTotals
    rows: list[AvailabilityCell]
    page: Page


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


def _parsed(cell: Cell) -> Parsed:
    return {rel: _intervals(ranges) for rel, ranges in cell.items()}


async def product_cells(idx: CatalogIndex, code: str, *, release: str | None,
                        client: UpstreamClient) -> dict[str, IndexCell | Parsed]:
    """The current view: the index's own cells; a pinned release: the published record, parsed."""
    if release is None:
        return dict(idx.by_code[code].cells)
    record = await client.product(code, release=release)
    return {s.site_code: _parsed(cell_from_upstream(s.available_releases, s.available_months, release))
            for s in record.site_codes}


async def site_cells(idx: CatalogIndex, site: str, *, release: str | None,
                     client: UpstreamClient) -> dict[str, tuple[str | None, IndexCell | Parsed]]:
    if release is None:
        return {p.code: (p.name, p.cells[site]) for p in idx.products if site in p.cells}
    record = await client.site(site, release=release)
    return {d.data_product_code: (d.data_product_title,
                                  _parsed(cell_from_upstream(d.available_releases, d.available_months, release)))
            for d in record.data_products}


def _intervals(ranges: list[str]) -> list[Interval]:
    out = []
    for r in ranges:
        a, _, b = r.partition("/")
        out.append((months.month_index(a), months.month_index(b or a)))
    return out


# Month texts are rendered thousands of times a call (a product at 81 sites) from a few hundred
# distinct months: formatting them was the largest part of eco_get_availability. Bounded anyway.
_month = lru_cache(maxsize=8192)(months.month_from_index)


def _count(ivs: tuple[Interval, ...]) -> int:
    return sum(b - a + 1 for a, b in ivs)


# A run's merged form, month count and range texts, by run. The index holds each equal run once
# and product-mode calls shape the same runs again and again; bounded (cleared when full), a few MB.
_RUNS_HELD = 4096
_runs: dict[tuple[Interval, ...], tuple[tuple[Interval, ...], int, tuple[str, ...]]] = {}


def _run(ivs: tuple[Interval, ...]) -> tuple[tuple[Interval, ...], int, tuple[str, ...]]:
    facts = _runs.get(ivs)
    if facts is None:
        merged = merge(list(ivs))
        merged = ivs if merged == ivs else merged  # most runs are merged already: keep one object
        m = _month
        facts = (merged, _count(merged), tuple(f"{m(a)}/{m(b)}" for a, b in merged))
        if len(_runs) >= _RUNS_HELD:
            _runs.clear()
        _runs[ivs] = facts
    return facts


def _every(ivs: tuple[Interval, ...]) -> list[str]:
    m = _month
    return [m(k) for a, b in ivs for k in range(a, b + 1)]


def shape_row(cell: Cell, *, provisional: Provisional, start: str | None, end: str | None,
              fmt: Format) -> RowData | None:
    """The cell filtered (provisional, window) and rendered; None when nothing is left.
    Works on integer month intervals: a product at 81 sites is thousands of months."""
    return shape_intervals(_parsed(cell), provisional=provisional, start=start, end=end, fmt=fmt)


def shape_intervals(parsed: Parsed, *, provisional: Provisional, start: str | None,
                    end: str | None, fmt: Format, overall: bool = True) -> RowData | None:
    """`shape_row` of a cell already parsed to month-index intervals (the catalog index holds
    them so: parsing its ISO texts again was a third of a product-mode call). Without `overall`
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


def shape_cell(cell: IndexCell | Parsed, *, provisional: Provisional, start: str | None, end: str | None,
               fmt: Format) -> RowData | None:
    """An eco_get_availability row (no overall ranges or months). An index cell's whole current
    view in ranges or counts (the default call) is read off what the index keeps for the cell:
    its range texts, month count and first and last month, made once per catalog build; only
    the per-release counts are summed."""
    if isinstance(cell, IndexCell):
        if provisional == "include" and start is None and end is None and fmt != "months":
            return _whole(cell, fmt)
        cell = cell.by_release
    return shape_intervals(cell, provisional=provisional, start=start, end=end, fmt=fmt, overall=False)


def _whole(cell: IndexCell, fmt: Format) -> RowData:
    runs = cell.by_release
    counts = {rel: _count(runs[rel]) for rel in sorted(runs)}  # the index's runs are merged already
    # The lists are copied: the row is the caller's, the index's texts are shared by every call.
    by_release: dict[str, Any] = {rel: list(cell.ranges[rel]) for rel in counts} if fmt == "ranges" else dict(counts)
    return RowData(month_count=cell.month_count, provisional_month_count=counts.get(PROVISIONAL, 0),
                   first_month=cell.first_month, last_month=cell.last_month, ranges=None, months=None,
                   by_release=by_release, counts=counts)


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


# -- the three modes of eco_get_availability -----------------------------------------------

def _check_mode_fields(mode: str, *, site_codes, domain_code, product_codes) -> None:
    if mode != "product":
        for name, value in (("site_codes", site_codes), ("domain_code", domain_code)):
            if value is not None:
                raise bad(name, f"applies to product mode only (product without site); this call is {mode} mode")
    if mode != "site" and product_codes is not None:
        raise bad("product_codes", f"applies to site mode only (site without product); this call is {mode} mode")


def availability_row(data: RowData, *, product_code: str, product_name: str | None, site_code: str,
                     site_name: str | None) -> AvailabilityRow:
    return AvailabilityRow(
        product_code=product_code, product_name=product_name, site_code=site_code, site_name=site_name,
        month_count=data.month_count, provisional_month_count=data.provisional_month_count,
        first_month=data.first_month, last_month=data.last_month, ranges=data.ranges, months=data.months,
        by_release=data.by_release)


@dataclass(frozen=True)
class _Naming:
    """What a row names: the key it is listed by (the site in product mode, the product in site
    mode) and that key's name; the answer's top level names the rest once."""

    mode: Mode

    def row(self, data: RowData, key: str, name: str | None) -> AvailabilityCell:
        product, site = (key, None) if self.mode == "site" else (None, key if self.mode == "product" else None)
        return AvailabilityCell(
            product_code=product, product_name=name if product else None, site_code=site,
            site_name=name if site else None, month_count=data.month_count,
            provisional_month_count=data.provisional_month_count, first_month=data.first_month,
            last_month=data.last_month, by_release=data.by_release)


# Rows of the whole current view, kept per index cell: such a row depends only on the cell (and
# the names of its index), the format and the mode, and a product-mode call made one for each of
# a product's 40-80 sites, every call (the read was 4.1M instructions a call for the benchmark's
# two products, callgrind; 0.63M with kept rows). Kept rows are never changed: the gateway dumps
# them. Bounded (cleared when full; ~2 KB a row, tracemalloc); each entry holds its cell, so a
# kept id is never reused.
_ROWS_HELD = 1024
_rows: dict[tuple[int, Mode, Format], tuple[IndexCell, RowData, AvailabilityCell]] = {}


def _kept_row(cell: IndexCell, fmt: Format, named: _Naming, key: str,
              name: str | None) -> tuple[RowData, AvailabilityCell]:
    at = (id(cell), named.mode, fmt)
    kept = _rows.get(at)
    if kept is None:
        data = shape_cell(cell, provisional="include", start=None, end=None, fmt=fmt)
        assert data is not None  # the index holds no cell without months
        row = named.row(data, key, name)
        data.by_release = row.by_release  # one copy of the lists kept, the row's (validation made it)
        kept = (cell, data, row)
        if len(_rows) >= _ROWS_HELD:
            _rows.clear()
        _rows[at] = kept
    return kept[1], kept[2]


async def get_availability(
    *, idx: CatalogIndex, client: UpstreamClient, product: str | None, site: str | None,
    site_codes: list[str] | None = None, domain_code: str | None = None, product_codes: list[str] | None = None,
    release: str | None = None, provisional: Provisional = "include", start_month: str | None = None,
    end_month: str | None = None, fmt: Format | None = None, limit: int = 100, offset: int = 0,
) -> Answer[AvailabilityRecord]:
    if product is None and site is None:
        raise bad("product", "give product (one row per site), site (one row per product), or both (one cell)")
    mode: Mode = "cell" if product and site else ("product" if product else "site")
    _check_mode_fields(mode, site_codes=site_codes, domain_code=domain_code, product_codes=product_codes)
    if release is not None and provisional == "only":
        raise bad("provisional", "'only' cannot be combined with release: a release holds no provisional data")
    if start_month and end_month and start_month > end_month:
        raise bad("start_month", f"{start_month} is after end_month {end_month}")
    fmt = fmt or ("months" if mode == "cell" else "ranges")
    resolved: dict[str, Any] = {}
    notes: list[str] = []
    prod = st = None
    if product is not None:
        r = resolve.resolve_product(product, index=idx)
        prod, resolved["product"] = idx.by_code[r.code], r.echo()
    if site is not None:
        rs = resolve.resolve_site(site, index=idx)
        st, resolved["site"] = idx.site_by_code[rs.code], rs.echo()
    tag = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
        notes.append(f"Months as published in {tag} (read from the upstream record of that release).")
    if start_month or end_month:
        notes.append("The month window was applied locally to each release's months.")

    wanted: set[str] | None = None
    # mode follows from which of product/site were given, so the entry it reads was resolved above.
    if mode == "product":
        assert prod is not None
        wanted = _sites_wanted(idx, site_codes, domain_code, resolved)
        cells = await product_cells(idx, prod.code, release=tag, client=client)
        keyed = {code: (idx.site_by_code[code].name if code in idx.site_by_code else None, cell)
                 for code, cell in cells.items() if wanted is None or code in wanted}
    elif mode == "site":
        assert st is not None
        wanted = _products_wanted(idx, product_codes, resolved)
        keyed = {code: pair for code, pair in (await site_cells(idx, st.code, release=tag, client=client)).items()
                 if wanted is None or code in wanted}
    else:
        assert prod is not None and st is not None
        cells = await product_cells(idx, prod.code, release=tag, client=client)
        keyed = {st.code: (st.name, cells[st.code])} if st.code in cells else {}

    # The default call (the whole current view, every release, ranges or counts) takes each row
    # from the kept rows of the index's cells; any other is shaped, and only its page made rows.
    kept = provisional == "include" and start_month is None and end_month is None and fmt != "months"
    named = _Naming(mode)
    shaped: list[tuple[str, str | None, RowData, AvailabilityCell | None]] = []
    for key in sorted(keyed):
        name, cell = keyed[key]
        if kept and isinstance(cell, IndexCell):
            shaped.append((key, name, *_kept_row(cell, fmt, named, key, name)))
            continue
        data = shape_cell(cell, provisional=provisional, start=start_month, end=end_month, fmt=fmt)
        if data is not None:
            shaped.append((key, name, data, None))
    if wanted is not None:
        missing = sorted(wanted - {k for k, _, _, _ in shaped})
        if missing:
            notes.append(f"No matching months for: {', '.join(missing)}.")
    rows = [row or named.row(data, key, name) for key, name, data, row in shaped[offset:offset + limit]]
    window = Window(start_month=start_month, end_month=end_month) if (start_month or end_month) else None
    record = AvailabilityRecord(
        mode=mode, product_code=prod.code if prod else None, product_name=prod.name if prod else None,
        site_code=st.code if st else None, site_name=st.name if st else None, release=tag,
        provisional=provisional, window=window, format=fmt, summary=totals([d for _, _, d, _ in shaped]),
        rows=rows, page=page(offset, limit, len(rows), len(shaped)),
    )
    return Answer(record, resolved=resolved, notes=notes, from_upstream=tag is not None)


def _sites_wanted(idx: CatalogIndex, site_codes: list[str] | None, domain_code: str | None,
                  resolved: dict[str, Any]) -> set[str] | None:
    wanted: set[str] | None = None
    if site_codes is not None:
        echoes = [resolve.resolve_site(s, index=idx, field="site_codes") for s in site_codes]
        wanted = {e.code for e in echoes}
        resolved["siteCodes"] = [e.echo() for e in echoes]
    if domain_code is not None:
        domain = domain_code.upper()
        in_domain = {s.code for s in idx.sites if s.domain_code == domain}
        wanted = in_domain if wanted is None else wanted & in_domain
    return wanted


def _products_wanted(idx: CatalogIndex, product_codes: list[str] | None, resolved: dict[str, Any]) -> set[str] | None:
    if product_codes is None:
        return None
    echoes = [resolve.resolve_product(p, index=idx, field="product_codes") for p in product_codes]
    resolved["productCodes"] = [e.echo() for e in echoes]
    return {e.code for e in echoes}
