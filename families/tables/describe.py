"""eco_describe_tables: a product's tables and fields, from its variables file.

It lists one site-month of the product (the newest of the release asked for, at the site asked
for or the one with the newest month) to find the current variables file and its MD5: one
GET /data/{product}/{site}/{month}, cached for cache.ttl_s.data. The file itself is fetched from
its signed URL only when the catalog database holds no copy with that MD5 (tables.kept), together
with that month's readme for the tables' descriptions. The listing's own file names tell each
table's layout and, for sensor products, the positions (HOR.VER) and averaging interval.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

from catalog import months
from catalog.access import catalog_index, catalog_read
from catalog.index import CatalogIndex, ProductEntry
from catalog.months import MONTH_PATTERN
from catalog.outage import DATABASE_DOWN
from catalog.resolve import PROVISIONAL, resolve_product, resolve_release, resolve_site
from downloads import paths
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from families.tables.common import LISTING_ENDPOINT, NEED, Package
from tables import kept, names, quality
from tables.variables import FieldDef, column_type, parse, table_descriptions, tables_of
from upstream import models as um

# A variables file or readme larger than this is not one: refused rather than held in memory.
SMALL_FILE_MAX = 8 << 20


class DescribeTablesInput(ToolInput):
    product: str = Field(max_length=300)
    release: str | None = Field(None, max_length=64, description=(
        "Default: the product's newest (else provisional)."))
    package: Package = "basic"
    tables: list[str] | None = Field(None, min_length=1, max_length=50)
    search: str | None = Field(None, min_length=1, max_length=200, description=(
        "Words in each listed field's name or description."))
    site_code: str | None = Field(None, max_length=200, description="Site whose newest month is listed.")
    start_month: str | None = Field(None, pattern=MONTH_PATTERN, description="For the stack step.")
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    limit: int = Field(100, ge=1, le=500)
    offset: int = Field(0, ge=0)


class TableSummary(WireModel):
    name: str
    type: str | None = Field(description="sensor, site-date, site-all or lab; null: no file in the month listed.")
    description: str | None
    fields: int = Field(description="In the package.")
    averaging_minutes: int | None
    positions: list[str] | None = Field(description="HOR.VER at the listed site and month.")


class TableField(WireModel):
    table: str
    name: str
    description: str
    data_type: str
    column_type: str = Field(description="Stacked: double, int64, string, date or timestamp (UTC).")
    units: str | None
    package: str
    pub_format: str
    primary_key: bool
    categorical_code_name: str | None


class DescribeTablesOutput(Envelope):
    product_code: str
    product_name: str
    release: str
    package: Package
    variables_file: str
    variables_md5: str | None
    listed_site: str
    listed_month: str
    tables: list[TableSummary]
    fields: list[TableField]
    page: Page


def _months_in(p: ProductEntry, site: str, release: str) -> tuple[tuple[int, int], ...]:
    cell = p.cells.get(site)
    if cell is None:
        return ()
    return cell.in_release.get(release) or cell.by_release.get(release) or ()


def _default_release(p: ProductEntry) -> str:
    released = [r for r in p.by_release if r != PROVISIONAL]
    if released:
        return max(released)
    if PROVISIONAL in p.by_release:
        return PROVISIONAL
    raise EcoError("not_found", f"product: {p.code} has no data at any site", details={"field": "product"})


def _site_month(idx: CatalogIndex, p: ProductEntry, release: str, site_code: str | None,
                resolved: dict[str, Any]) -> tuple[str, str]:
    """The site (asked for, or the one with the newest month) and its newest month in `release`."""
    if site_code is not None:
        rs = resolve_site(site_code, index=idx, field="site_code")
        if rs.matched_by != "code":
            resolved["siteCode"] = rs.echo()
        spans = _months_in(p, rs.code, release)
        if not spans:
            raise EcoError("not_found", f"site_code: {p.code} has no data at {rs.code} in {release}",
                           details={"field": "site_code", "didYouMean": sorted(s for s in p.cells
                                                                                if _months_in(p, s, release))[:10]})
        return rs.code, months.month_from_index(spans[-1][1])
    best = max(((spans[-1][1], s) for s in sorted(p.cells) if (spans := _months_in(p, s, release))),
               default=None, key=lambda x: x[0])
    if best is None:
        raise EcoError("not_found", f"release: {p.code} has no data in {release}",
                       details={"field": "release", "validReleases": sorted(p.by_release)})
    return best[1], months.month_from_index(best[0])


def _in_package(f: um.DataFile, package: str) -> bool:
    path = urlsplit(f.url).path
    other = "expanded" if package == "basic" else "basic"
    return f"/{other}/" not in path


async def fetch_small(call: CallContext, f: um.DataFile) -> bytes:
    """A small listed file (variables, readme) read into memory from its signed URL, its MD5
    checked; the storage host must be on downloads.allowed_hosts, as for a download."""
    allowed = paths.host_matcher(call.cfg.downloads.allowed_hosts)
    paths.check_url(f.url, allowed)
    chunks: list[bytes] = []
    total = 0
    async with call.client.stream(f.url, host_allowed=allowed) as resp:
        async for chunk in resp.aiter_bytes():
            total += len(chunk)
            if total > SMALL_FILE_MAX:
                raise EcoError("upstream_error", f"{f.name}: larger than {SMALL_FILE_MAX} bytes; not a variables "
                               "file or readme", details={"file": f.name})
            chunks.append(chunk)
    data = b"".join(chunks)
    if f.md5 and hashlib.md5(data).hexdigest() != f.md5:
        raise EcoError("checksum_mismatch", f"{f.name}: MD5 differs from the listing's", retryable=True,
                       details={"file": f.name, "expected": f.md5, "got": hashlib.md5(data).hexdigest()})
    return data


async def variables_for(call: CallContext, product: str, release: str, listing: um.DataListing,
                        notes: list[str]) -> tuple[kept.Kept, bool]:
    """The product's variables file in `release`: the catalog database's copy while the listing
    shows its MD5, else fetched (with the readme's table descriptions) and kept. True: fetched."""
    var = next((f for f in listing.files if names.parse(f.name).kind == "variables"), None)
    if var is None:
        raise EcoError("not_found", f"product: {product} publishes no variables file (the listing of "
                       f"{listing.site_code} {listing.month} has none): it has no tables to describe or stack",
                       details={"field": "product"})
    upstream = call.cfg.eco.base_url
    try:
        held = await catalog_read(kept.get, upstream, product, release)
    except DATABASE_DOWN:
        held, database = None, False  # the upstream still has the file: answer from it, keep nothing
    else:
        database = True
    if held is not None and held.md5 == var.md5 and held.file_name == var.name:
        return held, False
    data = await fetch_small(call, var)
    try:
        fields = parse(data)
    except ValueError as exc:
        raise EcoError("upstream_error", f"{var.name}: {exc}", details={"file": var.name}) from None
    readme = next((f for f in listing.files if names.parse(f.name).kind == "readme"), None)
    described = table_descriptions(await fetch_small(call, readme)) if readme is not None else {}
    if held is not None:
        notes.append(f"NEON published a new variables file for {product} in {release} ({var.name}); "
                     "it replaces the one kept before.")
    got = kept.Kept(product=product, release=release, file_name=var.name, md5=var.md5 or "", size=len(data),
                    fields=fields, tables=described, fetched_at="")
    if database:
        try:
            got = await catalog_read(kept.put, upstream, product, release, file_name=var.name, md5=got.md5,
                                     size=len(data), fields=fields, tables=described)
        except DATABASE_DOWN:
            database = False
    if not database:
        notes.append("The catalog database is unreachable: the variables file was read from NEON and not kept.")
    return got, True


def _layouts(listing: um.DataListing, package: str) -> dict[str, tuple[str, int | None, list[str] | None]]:
    """Per table in the month's files: its layout, averaging minutes and positions (HOR.VER)."""
    seen: dict[str, tuple[set[str], set[str], set[str]]] = {}
    for f in listing.files:
        if not _in_package(f, package):
            continue
        p = names.parse(f.name)
        if p.kind != "data" or p.table is None or p.layout is None:
            continue
        layouts, tmis, positions = seen.setdefault(p.table, (set(), set(), set()))
        layouts.add(p.layout)
        if p.layout == "sensor":
            tmis.add(p.tmi or "")
            positions.add(f"{p.hor}.{p.ver}")
    out = {}
    for table, (layouts, tmis, positions) in seen.items():
        tmi = next(iter(tmis)) if len(tmis) == 1 else None
        minutes = int(tmi) if tmi and tmi.isdigit() else None
        out[table] = (layouts.pop() if len(layouts) == 1 else "mixed", minutes, sorted(positions) or None)
    return out


def _matches(f: FieldDef, words: list[str]) -> bool:
    text = f"{f.name} {f.description}".lower()
    return all(w in text for w in words)


def _field_out(f: FieldDef) -> TableField:
    return TableField(table=f.table, name=f.name, description=f.description, data_type=f.data_type,
                      column_type=column_type(f), units=f.unit, package=f.package, pub_format=f.pub_format,
                      primary_key=f.primary_key.upper() == "Y", categorical_code_name=f.categorical_code_name or None)


def _pick_tables(all_tables: list[str], asked: list[str] | None) -> list[str]:
    if not asked:
        return all_tables
    by_lower = {t.lower(): t for t in all_tables}
    unknown = [t for t in asked if t.lower() not in by_lower]
    if unknown:
        raise EcoError("not_found", f"tables: {', '.join(unknown)} not in this product's variables file",
                       details={"field": "tables", "didYouMean": all_tables[:50]})
    wanted = {t.lower() for t in asked}
    return [t for t in all_tables if t.lower() in wanted]


async def describe_tables(args: DescribeTablesInput, call: CallContext) -> DescribeTablesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client, need=NEED)
    resolved: dict[str, Any] = {}
    notes: list[str] = []
    rp = resolve_product(args.product, index=idx)
    resolved["product"] = rp.echo()
    p = idx.by_code[rp.code]
    if args.release is not None:
        rr = resolve_release(args.release, index=idx)
        resolved["release"] = rr.echo()
        release = rr.tag
    else:
        release = _default_release(p)
    site, month = _site_month(idx, p, release, args.site_code, resolved)
    listing = await call.client.data_listing(p.code, site, month, package=args.package,
                                             release=None if release == PROVISIONAL else release)
    held, fetched = await variables_for(call, p.code, release, listing, notes)
    all_tables = tables_of(held.fields)
    chosen = _pick_tables(all_tables, args.tables)
    layouts = _layouts(listing, args.package)
    in_package = [f for f in held.fields if f.table in chosen and (args.package == "expanded" or f.package == "basic")]
    summaries = []
    for t in chosen:
        layout, minutes, positions = layouts.get(t, (None, None, None))
        summaries.append(TableSummary(name=t, type=layout, description=held.tables.get(t),
                                      fields=sum(f.table == t for f in in_package), averaging_minutes=minutes,
                                      positions=positions))
    words = (args.search or "").lower().split()
    matched = [f for f in in_package if _matches(f, words)] if words else in_package
    chunk = matched[args.offset:args.offset + args.limit]
    pg = page(args.offset, args.limit, len(chunk), len(matched))
    if any(s.type is None for s in summaries):
        notes.append(f"Tables with type null have no file in {site} {month} (published in some months only).")
    if any(s.positions for s in summaries):
        notes.append(f"positions are those with files at {site} in {month}; other sites have their own "
                     "(site_code).")
    flagged = {t: quality.flags(f.name for f in in_package if f.table == t) for t in chosen}
    if any(flagged.values()):
        notes.append("Quality flags (1: the row failed NEON's quality assessment): " + "; ".join(
            f"{t}: {', '.join(fl)}" for t, fl in flagged.items() if fl) + ". The SQL this service suggests keeps "
            "rows where they are 0.")
    notes.append("Fetched the variables file from NEON and kept it." if fetched else
                 "Variables file from the catalog database (its MD5 is the one NEON lists now).")
    endpoints = [LISTING_ENDPOINT] + (["storage: variables file, readme"] if fetched else [])
    return DescribeTablesOutput(
        product_code=p.code, product_name=p.name, release=release, package=args.package,
        variables_file=held.file_name, variables_md5=held.md5 or None, listed_site=site, listed_month=month,
        tables=summaries, fields=[_field_out(f) for f in chunk], page=pg, resolved=resolved, notes=notes,
        next_steps=_describe_steps(args, call, p, site, month, chosen, pg, summaries),
        source=Source(origin="upstream", endpoints=endpoints, api_base_url=cfg.eco.base_url))


def _released_in(p: ProductEntry, site: str, start: str, end: str) -> bool:
    """Whether `site` has a month of released data from `start` to `end`."""
    cell = p.cells.get(site)
    a0, b0 = months.month_index(start), months.month_index(end)
    return cell is not None and any(a <= b0 and a0 <= b for rel, spans in cell.by_release.items()
                                    if rel != PROVISIONAL for a, b in spans)


def _describe_steps(args: DescribeTablesInput, call: CallContext, p: ProductEntry, site: str, month: str,
                    chosen: list[str], pg: Page, summaries: list[TableSummary]) -> list[NextStep]:
    product = p.code
    steps: list[NextStep] = []
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_describe_tables", arguments={**more, "offset": pg.next_offset},
                              why="The next page of fields."))
    # The window asked (else the month listed) and the tables asked: what the stack step stacks.
    start = args.start_month or month
    end = args.end_month or (start if args.start_month is None else None)
    selection: dict[str, Any] = {"product": product, "site_codes": [site], "start_month": start}
    if end is not None and end != start:
        selection["end_month"] = end
    span = f"{start} to {end}" if end is not None and end != start else start
    if args.package != "basic":
        selection["package"] = args.package
    if args.release is not None:
        selection["release"] = args.release
    elif not _released_in(p, site, start, end or start):
        selection["include_provisional"] = True  # the window holds provisional data only
    stack_listed = "eco_stack_tables" in call.listed_tools if call.listed_tools else call.transport == "stdio"
    if stack_listed:
        timed = [t for t in summaries if t.averaging_minutes]
        if not args.tables and len({t.averaging_minutes for t in timed}) > 1:
            coarsest = max(timed, key=lambda t: t.averaging_minutes or 0)
            steps.append(NextStep(tool="eco_stack_tables", arguments={**selection, "tables": [coarsest.name]},
                                  why=f"Stack {coarsest.name} at {site} for {span}: the coarsest averaging interval "
                                      f"({coarsest.averaging_minutes} minutes), enough for daily or monthly means."))
        if args.tables:
            selection["tables"] = chosen
        steps.append(NextStep(tool="eco_stack_tables", arguments=selection,
                              why=f"Stack {'these tables' if args.tables else 'every table'} at {site} for {span} "
                                  "(widen sites and months as needed)."))
    else:
        steps.append(NextStep(tool="eco_list_files", arguments={**selection, "kind": "data"},
                              why=f"The data files these tables come from at {site} in {month}."))
    return steps
