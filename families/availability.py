"""The availability family: eco_get_availability. Which months of data exist: a row per site for
one product (product mode), a row per product at one site (site mode), or one cell for both, split
by release with PROVISIONAL as its own key.

The current view is read off the catalog index (no request); a pinned release reads the upstream
product or site record as published in that release (one cached request). Cells are filtered and
rendered by catalog.availability, which eco_get_product and eco_get_site use too.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog import months, resolve
from catalog.access import catalog_index
from catalog.availability import (
    AvailabilityTotals,
    Format,
    Parsed,
    Provisional,
    RowData,
    Window,
    cell_from_upstream,
    count_months,
    parse_cell,
    shape_intervals,
    totals,
)
from catalog.checks import DOMAIN_PATTERN, bad
from catalog.index import CatalogIndex
from catalog.index import Cell as IndexCell
from catalog.months import MONTH_PATTERN
from catalog.resolve import PROVISIONAL
from eco_core.memo import memos
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page, returned_again
from families.call import CallContext

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

Mode = Literal["product", "site", "cell"]

# Whether a row field is left out: `None is value`, called in C (per field of each row, each dump).
_absent_if_none = partial(operator.is_, None)


class AvailabilityRow(WireModel):
    # One product at one site (a comment: a docstring would be repeated in the tool schema). Its
    # months are listed once, per release, in byRelease, and it names only what varies between
    # rows: the site in product mode, the product in site mode. eco_get_product's fuller row is
    # catalog.availability's ProductAvailabilityRow (distinct names: one name, one shape).

    product_code: str | None = Field(None, exclude_if=_absent_if_none,
                                     description="Absent: the answer's.")
    product_name: str | None = Field(None, exclude_if=_absent_if_none,
                                     description="Absent: the answer's.")
    site_code: str | None = Field(None, exclude_if=_absent_if_none, description="Absent: the answer's.")
    site_name: str | None = Field(None, exclude_if=_absent_if_none, description="Absent: the answer's.")
    month_count: int = Field(description="Distinct months with data.")
    provisional_month_count: int
    first_month: str
    last_month: str
    by_release: dict[str, list[str] | int] = Field(
        default_factory=dict,
        description="Ranges, months or counts per format.")


class AvailabilityInput(ToolInput):
    product: str | None = Field(None, max_length=300)
    site: str | None = Field(None, max_length=200)
    site_codes: list[str] | None = Field(None, min_length=1, max_length=81,
                                         description="Product mode: only these sites.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="Product mode: only sites there.")
    product_codes: list[str] | None = Field(None, min_length=1, max_length=200,
                                            description="Site mode: only these products.")
    release: str | None = Field(None, max_length=64)
    provisional: Provisional = Field("include")
    start_month: str | None = Field(None, pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    format: Format | None = Field(
        None, description="Default ranges (cell mode: months).")
    limit: int = Field(100, ge=1, le=500)
    offset: int = Field(0, ge=0)


class AvailabilityOutput(Envelope):
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
    rows: list[AvailabilityRow]
    page: Page


# Whole answers read off the index alone (no pinned release), per input, configuration and index:
# such an answer depends on nothing else, and returning the same object again lets the gateway
# reuse its dump and text instead of rebuilding and re-encoding a 20 KB answer. At most 20,000
# rows in all (a default answer's rows are the kept rows below, so mostly shared).
_answers = memos.by_identity("availability.answers", max_entries=256, max_weight=20_000)


async def get_availability(args: AvailabilityInput, call: CallContext) -> AvailabilityOutput:
    _mode(args)  # a contradictory input is refused before the catalog is touched
    idx = await catalog_index(call.cfg, call.client)
    kept = _answers.get(idx, args, call.cfg)
    if kept is not None:
        return kept
    out = await availability_from(idx, args, call)
    # The gateway keeps only list-free inputs, so one holding a list arrives as a new object every
    # call: an answer kept for it could never be found again.
    if out.release is None and args.site_codes is None and args.product_codes is None:
        _answers.put(idx, args, call.cfg, value=returned_again(out), weight=len(out.rows))
    return out


async def availability_from(idx: CatalogIndex, args: AvailabilityInput, call: CallContext) -> AvailabilityOutput:
    """eco_get_availability's answer read off `idx` (the tool passes the process's warm index;
    comparing two indexes' answers, as the snapshot tests do, passes each)."""
    mode = _mode(args)
    fmt: Format = args.format or ("months" if mode == "cell" else "ranges")
    start, end = args.start_month, args.end_month
    resolved: dict[str, Any] = {}
    notes: list[str] = []
    prod = st = None
    if args.product is not None:
        r = resolve.resolve_product(args.product, index=idx)
        prod, resolved["product"] = idx.by_code[r.code], r.echo()
    if args.site is not None:
        rs = resolve.resolve_site(args.site, index=idx)
        st, resolved["site"] = idx.site_by_code[rs.code], rs.echo()
    tag = None
    if args.release is not None:
        rr = resolve.resolve_release(args.release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
        notes.append(f"Months as published in {tag} (read from the upstream record of that release).")
    if start or end:
        notes.append("The month window was applied locally to each release's months.")

    wanted: set[str] | None = None
    keyed: dict[str, tuple[str | None, IndexCell | Parsed]]
    # mode follows from which of product/site were given, so the entry it reads was resolved above.
    if mode == "product":
        assert prod is not None
        wanted = _sites_wanted(idx, args, resolved)
        cells = await _product_cells(idx, prod.code, tag, call.client)
        keyed = {code: (idx.site_by_code[code].name if code in idx.site_by_code else None, cell)
                 for code, cell in cells.items() if wanted is None or code in wanted}
    elif mode == "site":
        assert st is not None
        wanted = _products_wanted(idx, args.product_codes, resolved)
        keyed = {code: pair for code, pair in (await _site_cells(idx, st.code, tag, call.client)).items()
                 if wanted is None or code in wanted}
    else:
        assert prod is not None and st is not None
        cells = await _product_cells(idx, prod.code, tag, call.client)
        keyed = {st.code: (st.name, cells[st.code])} if st.code in cells else {}

    # The default call (the whole current view, every release, ranges or counts) takes each row
    # from the kept rows of the index's cells; any other is shaped, and only its page made rows.
    whole = args.provisional == "include" and start is None and end is None and fmt != "months"
    named = _Naming(mode)
    shaped: list[tuple[str, str | None, RowData, AvailabilityRow | None]] = []
    for key in sorted(keyed):
        name, cell = keyed[key]
        if whole and isinstance(cell, IndexCell):
            shaped.append((key, name, *_kept_row(cell, fmt, named, key, name)))
            continue
        data = _shape(cell, args.provisional, start, end, fmt)
        if data is not None:
            shaped.append((key, name, data, None))
    if wanted is not None:
        missing = sorted(wanted - {k for k, _, _, _ in shaped})
        if missing:
            notes.append(f"No matching months for: {', '.join(missing)}.")
    rows = [row or named.row(data, key, name) for key, name, data, row in shaped[args.offset:args.offset + args.limit]]
    pg = page(args.offset, args.limit, len(rows), len(shaped))
    product_code, site_code = (prod.code if prod else None), (st.code if st else None)
    return AvailabilityOutput(
        mode=mode, product_code=product_code, product_name=prod.name if prod else None, site_code=site_code,
        site_name=st.name if st else None, release=tag, provisional=args.provisional,
        window=Window(start_month=start, end_month=end) if (start or end) else None, format=fmt,
        summary=totals([d for _, _, d, _ in shaped]), rows=rows, page=pg, resolved=resolved, notes=notes,
        next_steps=_steps(args, mode, product_code, site_code, rows, pg, prod),
        source=Source(origin="catalog" if tag is None else "upstream", api_base_url=call.cfg.eco.base_url))


def _mode(args: AvailabilityInput) -> Mode:
    """The mode the input asks for, and the fields that do not fit it refused."""
    if args.product is None and args.site is None:
        raise bad("product", "give product (one row per site), site (one row per product), or both (one cell)")
    mode: Mode = "cell" if args.product and args.site else ("product" if args.product else "site")
    if mode != "product":
        for name, value in (("site_codes", args.site_codes), ("domain_code", args.domain_code)):
            if value is not None:
                raise bad(name, f"applies to product mode only (product without site); this call is {mode} mode")
    if mode != "site" and args.product_codes is not None:
        raise bad("product_codes", f"applies to site mode only (site without product); this call is {mode} mode")
    if args.release is not None and args.provisional == "only":
        raise bad("provisional", "'only' cannot be combined with release: a release holds no provisional data")
    if args.start_month and args.end_month and args.start_month > args.end_month:
        raise bad("start_month", f"{args.start_month} is after end_month {args.end_month}")
    return mode


def _steps(args: AvailabilityInput, mode: Mode, product_code: str | None, site_code: str | None,
           rows: list[AvailabilityRow], pg: Page, prod: Any = None) -> list[NextStep]:
    from tables.layout import has_tables

    steps: list[NextStep] = []
    if rows:
        # A row names only what varies between rows; the answer names the rest.
        last = max(rows, key=lambda r: r.last_month)
        month, product, site = last.last_month, last.product_code or product_code, last.site_code or site_code
        if prod is not None and product and site and has_tables(product, prod.publication_format_type):
            steps += _table_steps(args, product, site, last, prod.cells.get(site))
        steps.append(NextStep(
            tool="eco_list_files",
            arguments={"product": product, "site_codes": [site], "start_month": month, "end_month": month},
            why=f"Files of {product} at {site} for {month} (needs a token)."))
        if mode == "product":
            steps.append(NextStep(tool="eco_get_site", arguments={"site": rows[0].site_code},
                                  why="What else is measured at that site."))
        if mode == "site":
            steps.append(NextStep(tool="eco_get_product", arguments={"product": rows[0].product_code},
                                  why="What that product is."))
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_availability", arguments={**more, "offset": pg.next_offset},
                              why="The next page of rows."))
    return steps


def _table_steps(args: AvailabilityInput, product: str, site: str, row: AvailabilityRow,
                 cell: IndexCell | None) -> list[NextStep]:
    """The tables path for the window shown: the one asked (within the row's months), else the
    row's last twelve months of released data (a stack reads released data unless asked)."""
    released = [b for rel, spans in (cell.by_release.items() if cell else ()) if rel != PROVISIONAL for _, b in spans]
    provisional = not released or args.provisional == "only"
    last = row.last_month if provisional else months.month_from_index(max(released))
    end = min(args.end_month or last, row.last_month)
    start = max(args.start_month or months.month_from_index(months.month_index(end) - 11), row.first_month)
    if start > end:
        return []
    window = {"start_month": start, "end_month": end}
    stack: dict[str, Any] = {"product": product, "site_codes": [site], **window}
    if args.release is not None:
        stack["release"] = args.release
    elif provisional or (cell is not None and not any(
            a <= months.month_index(end) and months.month_index(start) <= b
            for rel, spans in cell.by_release.items() if rel != PROVISIONAL for a, b in spans)):
        stack["include_provisional"] = True  # the window holds provisional data only
    return [
        NextStep(tool="eco_describe_tables", arguments={"product": product, "site_code": site, **window},
                 why=f"{product}'s tables, fields and units (needs a token); its stack step keeps this window."),
        NextStep(tool="eco_stack_tables", arguments=stack,
                 why=f"Stack {product} at {site} from {start} to {end} into tables to ask in SQL (released data; "
                     "needs a token)."),
    ]


# -- cells: the index's (current view) or a release's upstream record ---------------------------

async def _product_cells(idx: CatalogIndex, code: str, release: str | None,
                         client: UpstreamClient) -> dict[str, IndexCell | Parsed]:
    """The current view: the index's own cells; a pinned release: the published record, parsed."""
    if release is None:
        return dict(idx.by_code[code].cells)
    record = await client.product(code, release=release)
    return {s.site_code: parse_cell(cell_from_upstream(s.available_releases, s.available_months, release))
            for s in record.site_codes}


async def _site_cells(idx: CatalogIndex, site: str, release: str | None,
                      client: UpstreamClient) -> dict[str, tuple[str | None, IndexCell | Parsed]]:
    if release is None:
        return {p.code: (p.name, p.cells[site]) for p in idx.products if site in p.cells}
    record = await client.site(site, release=release)
    return {d.data_product_code: (d.data_product_title,
                                  parse_cell(cell_from_upstream(d.available_releases, d.available_months, release)))
            for d in record.data_products}


def _sites_wanted(idx: CatalogIndex, args: AvailabilityInput, resolved: dict[str, Any]) -> set[str] | None:
    wanted: set[str] | None = None
    if args.site_codes is not None:
        echoes = [resolve.resolve_site(s, index=idx, field="site_codes") for s in args.site_codes]
        wanted = {e.code for e in echoes}
        resolved["siteCodes"] = [e.echo() for e in echoes]
    if args.domain_code is not None:
        domain = args.domain_code.upper()
        in_domain = {s.code for s in idx.sites if s.domain_code == domain}
        wanted = in_domain if wanted is None else wanted & in_domain
    return wanted


def _products_wanted(idx: CatalogIndex, product_codes: list[str] | None, resolved: dict[str, Any]) -> set[str] | None:
    if product_codes is None:
        return None
    echoes = [resolve.resolve_product(p, index=idx, field="product_codes") for p in product_codes]
    resolved["productCodes"] = [e.echo() for e in echoes]
    return {e.code for e in echoes}


# -- rows -----------------------------------------------------------------------------------

def _shape(cell: IndexCell | Parsed, provisional: Provisional, start: str | None, end: str | None,
           fmt: Format) -> RowData | None:
    """A row's months (no overall ranges or months: byRelease lists each month once). An index
    cell's whole current view in ranges or counts is read off what the index keeps for the cell:
    its runs (as range texts), month count and first and last month; only the per-release counts
    are summed."""
    if isinstance(cell, IndexCell):
        if provisional == "include" and start is None and end is None and fmt != "months":
            return _whole(cell, fmt)
        cell = cell.by_release
    return shape_intervals(cell, provisional=provisional, start=start, end=end, fmt=fmt, overall=False)


def _whole(cell: IndexCell, fmt: Format) -> RowData:
    runs = cell.by_release
    counts = {rel: count_months(runs[rel]) for rel in sorted(runs)}  # the index's runs are merged already
    if fmt == "ranges":
        texts = cell.ranges  # made for this call: the row may keep them
        by_release: dict[str, Any] = {rel: texts[rel] for rel in counts}
    else:
        by_release = dict(counts)
    return RowData(month_count=cell.month_count, provisional_month_count=counts.get(PROVISIONAL, 0),
                   first_month=cell.first_month, last_month=cell.last_month, ranges=None, months=None,
                   by_release=by_release, counts=counts)


@dataclass(frozen=True)
class _Naming:
    """What a row names: the key it is listed by (the site in product mode, the product in site
    mode) and that key's name; the answer's top level names the rest once."""

    mode: Mode

    def row(self, data: RowData, key: str, name: str | None) -> AvailabilityRow:
        product, site = (key, None) if self.mode == "site" else (None, key if self.mode == "product" else None)
        return AvailabilityRow(
            product_code=product, product_name=name if product else None, site_code=site,
            site_name=name if site else None, month_count=data.month_count,
            provisional_month_count=data.provisional_month_count, first_month=data.first_month,
            last_month=data.last_month, by_release=data.by_release)


# Rows of the whole current view per index cell, mode and format: a product-mode call makes one
# for each of a product's 40-80 sites, and such a row depends on nothing else. Kept rows are never
# changed (the gateway dumps them); each entry holds its cell, so the id in its key is never reused.
ROWS_KEPT = 1024
_rows = memos.by_value("availability.rows", max_entries=ROWS_KEPT)


def _kept_row(cell: IndexCell, fmt: Format, named: _Naming, key: str,
              name: str | None) -> tuple[RowData, AvailabilityRow]:
    at = (id(cell), named.mode, fmt)
    kept = _rows.get(at)
    if kept is None:
        data = _whole(cell, fmt)
        row = named.row(data, key, name)
        data.by_release = row.by_release  # one copy of the lists kept, the row's (validation made it)
        kept = (cell, data, row)
        _rows.put(at, kept)
    return kept[1], kept[2]
