"""The tables family: eco_describe_tables, eco_stack_tables, eco_query_tables and eco_plot_tables
(a chart of a query: its section at the end). NEON publishes each table of a
product as one CSV per site and month, with the meaning, type and units of every column in a
separate variables file; these tools read that dictionary and stack the CSVs into tables.

eco_describe_tables lists one site-month of the product (the newest of the release asked for, at
the site asked for or the one with the newest month) to find the current variables file and its
MD5: one GET /data/{product}/{site}/{month}, cached for cache.ttl_s.data. The file itself is
fetched from its signed URL only when the catalog database holds no copy with that MD5
(tables.kept), together with that month's readme for the tables' descriptions. The listing's own
file names tell each table's layout and, for sensor products, the positions (HOR.VER) and
averaging interval.

eco_stack_tables lists the selection once (as eco_list_files does), keeps the files a stack reads
(tables.stack.needed), plans them as eco_download_files plans data files (caps and confinement
before any byte; downloads.max_stack_files for their number), and answers from the dataset's
dataset.json when every source is unchanged and on disk. Otherwise it downloads what is missing or
changed through downloads/ (verified, resumable, in the manifest) and stacks with tables/, which
rebuilds only the tables whose sources changed. The stacking runs on worker threads; progress goes
to stderr and, when the client asked, as MCP progress notifications.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr

from catalog import months
from catalog.access import catalog_index, catalog_read
from catalog.citation_text import product_citation
from catalog.index import CatalogIndex, ProductEntry
from catalog.months import MONTH_PATTERN
from catalog.outage import DATABASE_DOWN
from catalog.releases import bare_doi, doi_link
from catalog.resolve import PROVISIONAL, resolve_product, resolve_release, resolve_site
from downloads import paths
from downloads.files import FileRecord, list_site_months
from downloads.plan import Item, Plan, check, start
from downloads.selection import select
from downloads.transfer import PROGRESS_EVERY_S, download
from eco_core.bounds import Configured
from eco_core.errors import EcoError
from eco_core.paging import RowCap
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from tables import kept, layout, names, quality
from tables.layout import on_disk
from tables.variables import FieldDef, column_type, parse, table_descriptions, tables_of
from upstream import models as um

if TYPE_CHECKING:
    # The engines load with the tool that runs them, not with every worker (pyarrow, DuckDB).
    from tables import query

log = logging.getLogger("eco.tables")

Package = Literal["basic", "expanded"]
NEED = ("products", "sites", "releases")
LISTING_ENDPOINT = "GET /data/{productCode}/{siteCode}/{yearMonth}"
# A variables file or readme larger than this is not one: refused rather than held in memory.
SMALL_FILE_MAX = 8 << 20


# -- eco_describe_tables ------------------------------------------------------------------------

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


# -- eco_stack_tables ---------------------------------------------------------------------------

# The longest a stack call over HTTP waits for its build (wait_seconds), the wait its nextSteps
# propose while a dataset builds, the room kept before the call's deadline and how often the
# row is read meanwhile.
STACK_WAIT_MAX_S = 25
STACK_WAIT_S = 20
STACK_WAIT_RESERVE_S = 2.0
STACK_WAIT_POLL_S = 0.25


class StackTablesInput(ToolInput):
    product: str | None = Field(None, max_length=300, description="With site_codes, start_month: the selection.")
    site_codes: Annotated[list[str] | None, Configured("limits.max_sites_per_call", "maxItems")] = Field(
        None, min_length=1)
    start_month: str | None = Field(None, pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    package: Package = "basic"
    release: str | None = Field(None, max_length=64, description="Default: latest per month.")
    include_provisional: bool = Field(False, description="Also PROVISIONAL months (see the release column).")
    tables: list[str] | None = Field(None, min_length=1, max_length=50, description=(
        "Only these (and sensor_positions, science_review_flags)."))
    max_bytes: int | None = Field(None, ge=1, description="Refuse a selection of more source bytes.")
    dataset_id: str | None = Field(None, pattern=layout.DATASET_ID_PATTERN, max_length=200, description=(
        "An earlier call's datasetId, instead of a selection."))
    wait_seconds: int = Field(0, ge=0, le=STACK_WAIT_MAX_S, description=(
        "HTTP: wait up to this long for a building dataset to be ready; 0 answers at once."))


class StackedColumn(WireModel):
    name: str
    type: str
    units: str | None


class StackedTable(WireModel):
    name: str
    layout: str
    file: str = Field(description="Under folder.")
    rows: int
    columns: list[StackedColumn]
    time_span: dict[str, str] | None = Field(description="start, end (UTC) and the columns they come from.")
    rebuilt: bool = Field(description="false: unchanged, kept.")


class DatasetCitation(WireModel):
    release: str
    doi: str | None
    doi_url: str | None = None
    text: str | None
    bibtex: str | None


class StackTotals(WireModel):
    source_files: int
    downloaded: int
    bytes_transferred: int
    tables_rebuilt: int
    seconds: float


class BuildProgress(WireModel):
    phase: str = Field(description="queued, downloading, stacking or ready.")
    files_total: int | None = None
    files_downloaded: int | None = None
    bytes_total: int | None = None
    bytes_downloaded: int | None = None
    tables_total: int | None = None
    tables_done: int | None = None


class BuildError(WireModel):
    code: str
    message: str
    retryable: bool


class StackTablesOutput(Envelope):
    dataset_id: str
    state: Literal["building", "ready", "failed"] = Field("ready", description=(
        "building: call again with dataset_id; failed: see buildError."))
    progress: BuildProgress | None = None
    build_error: BuildError | None = Field(None, description="When state is failed.")
    folder: str | None = Field(description="stdio only; null over HTTP.")
    product_code: str
    package: Package
    site_codes: list[str]
    start_month: str
    end_month: str
    releases: list[str]
    tables: list[StackedTable]
    files: dict[str, str] = Field(description="Metadata files by kind.")
    citations: list[DatasetCitation]
    totals: StackTotals


# Files transferred per download batch: between batches the call reports its progress.
BATCH = 32


class _Reporter:
    """Progress of one stack on stderr (logging) and, when the client asked (a progressToken), as
    MCP progress notifications. `advance` may be called from the stacking's worker thread: the
    notifications are always sent from the call's event loop, and `flush` waits for them so they
    reach the client before the result."""

    def __init__(self, call: CallContext, total: int) -> None:
        self.call, self.total, self.done = call, total, 0
        self.loop = asyncio.get_running_loop()
        self.last = 0.0
        self.pending: set[asyncio.Future[None]] = set()

    def advance(self, n: int, message: str, *, force: bool = False) -> None:
        self.done += n
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        log.info("stack progress: %s", message)
        if self.call.progress is not None:
            self.loop.call_soon_threadsafe(self._send, float(self.done), message)

    def _send(self, done: float, message: str) -> None:
        assert self.call.progress is not None
        fut = asyncio.ensure_future(self.call.progress(done, float(self.total), message))
        self.pending.add(fut)
        fut.add_done_callback(self.pending.discard)

    async def flush(self) -> None:
        if self.pending:
            # A client that went away must not fail the stack: its notifications are best effort.
            await asyncio.gather(*self.pending, return_exceptions=True)


def _plan_items(idx: CatalogIndex, product: str, files: list[FileRecord], base: PurePosixPath) -> list[Item]:
    """Each source file once (a lab or site-all file repeats in every site-month: the first copy
    is fetched), under product/site/month as eco_download_files places it."""
    items: dict[str, Item] = {}
    for f in files:
        if f.name in items:
            continue
        items[f.name] = Item(url=f.url or "", rel=base.joinpath(product, f.site_code, f.month, paths.plain_name(f.name)),
                             name=f.name, source="data", size=f.size, md5=f.md5, token_only=False, product=product,
                             site=f.site_code, month=f.month, release=f.release)
    return list(items.values())


async def _citations(call: CallContext, product: str, releases: list[str], sites: list[str]) -> list[dict[str, Any]]:
    idx = await catalog_index(call.cfg, call.client, need=NEED)
    when = datetime.now(UTC).date()
    out = []
    for rel in releases:
        provisional = rel == PROVISIONAL
        got = product_citation(idx, product, release="latest" if provisional else rel, provisional=provisional,
                               sites=sites, when=when)
        out.append({"release": rel, "doi": got.doi, "text": got.text, "bibtex": got.bibtex})
    return out


async def _issue_log(call: CallContext, product: str, notes: list[str]) -> list[dict[str, Any]] | None:
    try:
        rec = await call.client.product(product)
    except EcoError as exc:
        notes.append(f"The issue log could not be read ({exc.code}); the tables are complete without it.")
        return None
    logs = [c.model_dump(by_alias=True) for c in rec.change_logs or []]
    return logs or None


def _answer(record: dict[str, Any], folder: Path | None, rebuilt: set[str], totals: StackTotals, resolved: dict[str, Any],
            notes: list[str], steps: list[NextStep], cfg: Any, endpoint: str) -> StackTablesOutput:
    sel = record["selection"]
    tables = [StackedTable(name=t["name"], layout=t["layout"], file=t["file"], rows=t["rows"],
                           columns=[StackedColumn(**c) for c in t["columns"]], time_span=t.get("timeSpan"),
                           rebuilt=t["name"] in rebuilt) for t in record["tables"].values()]
    return StackTablesOutput(
        dataset_id=record["datasetId"], folder=None if folder is None else str(folder), product_code=record["product"],
        package=record["package"], site_codes=sel["siteCodes"], start_month=sel["startMonth"],
        end_month=sel["endMonth"], releases=record["releases"], tables=tables,
        files={k: v["file"] for k, v in (record.get("files") or {}).items()},
        citations=[DatasetCitation(**{**c, "doi": bare_doi(c.get("doi")), "doi_url": doi_link(c.get("doi"))})
                   for c in record.get("citations") or []], totals=totals,
        resolved=resolved, notes=[*notes, *record.get("notes", [])], next_steps=steps,
        source=Source(origin="upstream", endpoints=[endpoint], api_base_url=cfg.eco.base_url))


def _stack_steps(product: str, record: dict[str, Any]) -> list[NextStep]:
    names_ = list(record["tables"])
    data = [n for n in names_ if n not in (names.SENSOR_POSITIONS, names.SCIENCE_REVIEW_FLAGS)]
    args: dict[str, Any] = {"product": product}
    if data:
        args["tables"] = data[:50]
    steps = [NextStep(tool="eco_describe_tables", arguments=args, why="What each column means, its type and units.")]
    # The dataset is stacked (ready): ask it in SQL next.
    ask = query_next_step(record)
    return steps if ask is None else [ask, *steps]


def _selection_of(args: StackTablesInput) -> None:
    """A dataset id alone, or a selection (product, site_codes, start_month): checked before anything."""
    if args.dataset_id is not None:
        extra = [f for f in ("product", "site_codes", "start_month", "end_month", "tables", "release")
                 if getattr(args, f) is not None]
        if extra:
            raise EcoError("invalid_argument", f"dataset_id: give it alone, or a selection without it (also given: "
                           f"{', '.join(extra)})", details={"field": "dataset_id"})
        return
    missing = [f for f in ("product", "site_codes", "start_month") if getattr(args, f) is None]
    if missing:
        raise EcoError("invalid_argument", f"{missing[0]}: required (a selection is product, site_codes and "
                       "start_month; or give dataset_id)", details={"field": missing[0]})


class _Listed:
    """A selection listed and planned: caps, hosts and confinement checked, nothing fetched."""

    def __init__(self, query: Any, resolved: dict[str, Any], plan: Plan, wanted: list[str] | None,
                 endpoint: str, provisional_left: int = 0) -> None:
        self.query, self.resolved, self.plan, self.wanted, self.endpoint = query, resolved, plan, wanted, endpoint
        self.provisional_left = provisional_left

    def provisional_note(self) -> list[str]:
        """What was left out by default: neonUtilities too stacks released data only unless asked."""
        n = self.provisional_left
        if not n:
            return []
        return [f"Left out {n} provisional site-month{'s' if n != 1 else ''} (not in a release yet, may change): "
                "released data only by default; include_provisional=true stacks them too, told apart by each "
                "row's release column."]

    @property
    def selection(self) -> dict[str, Any]:
        q = self.query
        return {"product": q.product, "siteCodes": list(q.sites), "startMonth": q.start, "endMonth": q.end,
                "package": q.package, "release": q.release, "includeProvisional": q.include_provisional,
                "tables": self.wanted}


async def _list_and_plan(args: StackTablesInput, call: CallContext, idx: CatalogIndex, plan: Plan, query: Any,
                         resolved: dict[str, Any]) -> _Listed:
    from tables import stack
    cfg, client = call.cfg, call.client
    wanted = sorted(set(args.tables)) if args.tables else None
    listing = await list_site_months(client, cfg, query)
    endpoint = LISTING_ENDPOINT if len(query.sites) == 1 and query.start == query.end else "POST /data/query"
    left = len(_provisional_left(idx, query, listing))
    if not listing.files:
        raise EcoError("not_found", f"start_month: no data for {query.product} at {', '.join(query.sites)} from "
                       f"{query.start} to {query.end}" + ("" if query.include_provisional else " (released data)"),
                       details={"field": "start_month", **({"provisionalSiteMonths": left} if left else {})},
                       hint=f"{left} site-month(s) hold provisional data only: include_provisional=true stacks them."
                       if left else "eco_get_availability tells which months each site has.")
    present = {f.table for f in listing.files if f.kind == "data" and f.table}
    if wanted:
        unknown = [t for t in wanted if t not in present and t not in (names.SENSOR_POSITIONS,
                                                                       names.SCIENCE_REVIEW_FLAGS)]
        if unknown:
            raise EcoError("not_found", f"tables: {', '.join(unknown)} has no file in this selection",
                           details={"field": "tables", "didYouMean": sorted(present)[:50]})
    if not any(f.kind == "variables" for f in listing.files):
        raise EcoError("not_found", f"product: {query.product} has no variables file in this selection: nothing "
                       "to stack (no data, or not a tabular product)", details={"field": "product"})
    use = stack.needed((f.name for f in listing.files), set(wanted) if wanted else None,
                       {f.name: f.md5 for f in listing.files})
    plan.items = _plan_items(idx, query.product, [f for f in listing.files if f.name in use], plan.base)
    check(plan, cfg, if_exists="skip", max_bytes=args.max_bytes, max_files=cfg.downloads.max_stack_files)
    return _Listed(query, resolved, plan, wanted, endpoint, left)


def _provisional_left(idx: CatalogIndex, query: Any, listing: Any) -> set[tuple[str, str]]:
    """The site-months left out for holding provisional data only (include_provisional false): as
    the upstream answered, else as the availability catalog says (NEON's POST query omits them)."""
    if query.include_provisional or query.release is not None:
        return set()
    entry = idx.by_code.get(query.product)
    out = set(listing.provisional_only)
    for site in query.sites:
        cell = entry.cells.get(site) if entry is not None else None
        for a, b in cell.by_release.get(PROVISIONAL, ()) if cell is not None else ():
            out.update((site, months.month_from_index(k)) for k in range(a, b + 1)
                       if query.start <= months.month_from_index(k) <= query.end
                       and (site, months.month_from_index(k)) not in listing.site_months)
    return out


def _zero_totals(n: int, started: float) -> StackTotals:
    return StackTotals(source_files=n, downloaded=0, bytes_transferred=0, tables_rebuilt=0,
                       seconds=round(time.monotonic() - started, 3))


async def stack_tables(args: StackTablesInput, call: CallContext) -> StackTablesOutput:
    from tables import dataset
    from tables.stack import SourceFile
    _selection_of(args)
    if call.transport == "http":
        return await _stack_on_server(args, call)
    cfg, client = call.cfg, call.client
    started = time.monotonic()
    idx = await catalog_index(cfg, client, need=NEED)
    if not cfg.downloads_enabled:
        raise EcoError("feature_unavailable", "downloads are disabled on this server (downloads.enabled): stacking "
                       "reads its files from the download directory", details={"setting": "downloads.enabled"})
    plan = start(cfg, None)
    if args.dataset_id is not None:
        folder = plan.confiner.directory(PurePosixPath(dataset.FOLDER, args.dataset_id), "dataset_id")
        record = await asyncio.to_thread(dataset.load, folder)
        if record is None:
            raise EcoError("not_found", f"dataset_id: no dataset {args.dataset_id} in the download directory",
                           details={"field": "dataset_id"})
        return _answer(record, folder, set(), _zero_totals(len(record.get("sources") or []), started), {},
                       ["Answered from the dataset's dataset.json (not checked against upstream: call with the "
                        "selection for that)."], _stack_steps(record["product"], record), cfg, LISTING_ENDPOINT)
    query, resolved = select(idx, cfg, args)
    wanted = sorted(set(args.tables)) if args.tables else None
    ds_id = dataset.dataset_id(query.product, list(query.sites), query.start, query.end, query.package,
                               query.release, query.include_provisional, wanted)
    # The dataset's folder must resolve inside the download directory, checked before any request.
    folder = plan.confiner.directory(PurePosixPath(dataset.FOLDER, ds_id), "dataset folder")
    listed = await _list_and_plan(args, call, idx, plan, query, resolved)
    endpoint = listed.endpoint
    notes: list[str] = listed.provisional_note()
    sources = [SourceFile(plan.root / i.rel, i.name, i.md5, i.release or PROVISIONAL) for i in plan.items]
    record = await asyncio.to_thread(dataset.load, folder)
    current = record is not None and await asyncio.to_thread(dataset.is_current, record, folder, sources)
    if current and record is not None:
        notes.append("Unchanged upstream since the dataset was stacked: answered from its dataset.json.")
        return _answer(record, folder, set(), _zero_totals(len(sources), started), resolved, notes,
                       _stack_steps(query.product, record), cfg, endpoint)
    # Only what is missing or changed goes to the transfers; what the dataset recorded with the
    # same MD5 and size is on disk already.
    recorded = {(s["name"], s.get("md5")): s.get("size") for s in (record or {}).get("sources") or []}
    fetch = [i for i, s in zip(plan.items, sources, strict=True)
             if not on_disk(s.path, recorded.get((i.name, i.md5)))]
    reporter = _Reporter(call, len(fetch) + len(sources))
    downloaded = moved = 0
    for k in range(0, len(fetch), BATCH):
        batch = Plan(root=plan.root, base=plan.base, name_max=plan.name_max, path_max=plan.path_max,
                     confiner=plan.confiner, items=fetch[k:k + BATCH])
        _, got = await download(client, cfg, batch)
        notes += batch.notes
        downloaded += got.downloaded + got.resumed
        moved += got.bytes_transferred
        reporter.advance(len(batch.items), f"downloaded {min(k + BATCH, len(fetch))}/{len(fetch)} files, "
                         f"{moved} bytes", force=k + BATCH >= len(fetch))
    releases = sorted({s.release for s in sources})
    cites = await _citations(call, query.product, releases, list(query.sites))
    issue_log = await _issue_log(call, query.product, notes)
    selection = listed.selection

    def report(p: dataset.Progress) -> None:
        reporter.done = len(fetch) + p.files_done
        reporter.advance(0, f"stacking: {p.tables_done}/{p.tables_total} tables, {p.files_done}/{p.files_total} "
                            "files read", force=p.tables_done == p.tables_total and p.tables_total > 0)

    try:
        built = await asyncio.to_thread(
            dataset.build, folder, dataset.table_sources(sources), root=plan.root, product=query.product,
            package=query.package, wanted=wanted, selection=selection, citations=cites, issue_log=issue_log,
            progress=dataset.Progress(report=report))
    except dataset.NoVariables:
        raise EcoError("not_found", f"product: {query.product} has no variables file in this selection",
                       details={"field": "product"}) from None
    await reporter.flush()
    totals = StackTotals(source_files=len(sources), downloaded=downloaded, bytes_transferred=moved,
                         tables_rebuilt=len(built.rebuilt), seconds=round(time.monotonic() - started, 3))
    if built.kept and built.rebuilt:
        notes.append(f"Rebuilt {', '.join(built.rebuilt)} (their sources changed upstream); kept the other tables.")
    return _answer(built.record, folder, set(built.rebuilt), totals, resolved, notes,
                   _stack_steps(query.product, built.record), cfg, endpoint)


# -- eco_stack_tables over HTTP: the server's dataset store --------------------------------------

def _server_steps(row: Any, record: dict[str, Any] | None, selection_call: dict[str, Any]) -> list[NextStep]:
    from tables.models import BUILDING, FAILED
    from tables.store import MAX_ATTEMPTS

    if row.state == BUILDING:
        return [NextStep(tool="eco_stack_tables", arguments={"dataset_id": row.dataset_id,
                                                             "wait_seconds": STACK_WAIT_S},
                         why="The dataset is being built on the server: call again (waiting for it) until it is "
                             "ready.")]
    if row.state == FAILED:
        if row.attempts < MAX_ATTEMPTS:
            return [NextStep(tool="eco_stack_tables", arguments=selection_call,
                             why="Call again with the selection to build it again (fresh file URLs).")]
        return []
    return _stack_steps(row.product, record) if record is not None else []


def _selection_call(sel: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"product": sel["product"], "site_codes": sel["siteCodes"], "start_month": sel["startMonth"],
                           "end_month": sel["endMonth"]}
    if sel.get("package") != "basic":
        out["package"] = sel["package"]
    if sel.get("release"):
        out["release"] = sel["release"]
    if sel.get("includeProvisional"):
        out["include_provisional"] = True
    if sel.get("tables"):
        out["tables"] = sel["tables"]
    return out


def _server_answer(row: Any, record: dict[str, Any] | None, *, resolved: dict[str, Any], notes: list[str], cfg: Any,
                   endpoint: str, started: float) -> StackTablesOutput:
    """The dataset's state as an HTTP caller may see it: never a server path."""
    sel = row.selection
    prog = row.progress or {}
    progress = BuildProgress(phase=prog.get("phase", row.state), files_total=prog.get("filesTotal"),
                             files_downloaded=prog.get("filesDownloaded"), bytes_total=prog.get("bytesTotal"),
                             bytes_downloaded=prog.get("bytesDownloaded"), tables_total=prog.get("tablesTotal"),
                             tables_done=prog.get("tablesDone"))
    steps = _server_steps(row, record, _selection_call(sel))
    totals = _zero_totals(len(row.plan.get("items") or []) if row.plan else prog.get("filesTotal") or 0, started)
    if record is not None:
        # Ready: the build's own figures, as its progress reports them (not the zeros of a call
        # that only read the result).
        totals = totals.model_copy(update={"downloaded": prog.get("filesDownloaded") or 0,
                                           "bytes_transferred": prog.get("bytesDownloaded") or 0,
                                           "tables_rebuilt": prog.get("tablesDone") or 0})
        out = _answer(record, None, set(), totals, resolved, notes, steps, cfg, endpoint)
        return out.model_copy(update={"state": "ready", "progress": progress})
    error = BuildError(**row.error) if row.error else None
    return StackTablesOutput(
        dataset_id=row.dataset_id, state=row.state, progress=progress, build_error=error, folder=None,
        product_code=sel["product"], package=sel["package"], site_codes=sel["siteCodes"], start_month=sel["startMonth"],
        end_month=sel["endMonth"], releases=[], tables=[], files={}, citations=[], totals=totals, resolved=resolved,
        notes=notes, next_steps=steps, source=Source(origin="upstream", endpoints=[endpoint],
                                                     api_base_url=cfg.eco.base_url))


def _ready_record(cfg: Any, row: Any) -> tuple[Any, dict[str, Any] | None]:
    """The row and, when ready, its dataset.json (its last use touched). A ready dataset whose
    files this process cannot read is recorded failed (store.missing): a call with the selection
    builds it again, and the reason says what to check."""
    from tables import dataset, store
    from tables.models import READY

    if row.state != READY:
        return row, None
    record = dataset.load(store.folder_of(cfg, row.dataset_id))
    if record is None:
        return store.missing(row), None
    store.touch(row)
    return row, record


async def _stack_on_server(args: StackTablesInput, call: CallContext) -> StackTablesOutput:
    """Over HTTP: the dataset's state in the server's store, its build queued when it is new (or
    failed before); see tables.store for where the caller's token goes (the listing only)."""
    from tables import store
    from tables.models import READY
    from upstream import context

    cfg = call.cfg
    started = time.monotonic()
    if args.dataset_id is not None:
        row = await catalog_read(store.lookup, args.dataset_id)
        if row is None:
            raise _no_dataset(args.dataset_id)
        row = await _wait_built(call, row, args.wait_seconds)
        row, record = await catalog_read(_ready_record, cfg, row)
        return _server_answer(row, record, resolved={}, notes=[], cfg=cfg, endpoint=LISTING_ENDPOINT, started=started)
    idx = await catalog_index(cfg, call.client, need=NEED)
    query, resolved = select(idx, cfg, args)
    root = store.store_root(cfg)
    name_max, path_max = paths.limits(root)
    plan = Plan(root=root / store.SOURCES, base=PurePosixPath(), name_max=name_max, path_max=path_max,
                confiner=paths.Confiner(root / store.SOURCES))
    listed = await _list_and_plan(args, call, idx, plan, query, resolved)
    limit = min(cfg.tables.max_bytes_per_dataset, cfg.tables.max_store_bytes)
    if plan.bytes > limit:
        setting = ("tables.max_bytes_per_dataset" if limit == cfg.tables.max_bytes_per_dataset
                   else "tables.max_store_bytes")
        raise EcoError("download_limit_exceeded", f"the selection is {plan.bytes} source bytes, at most {limit} per "
                       f"dataset on this server ({setting}); narrow the sites, months or tables",
                       details={"bytes": plan.bytes, "maxBytes": limit, "setting": setting, "files": len(plan.items)})
    selection = listed.selection
    key = store.dataset_key(selection, [(i.name, i.md5, i.release or PROVISIONAL) for i in plan.items],
                            cfg.eco.base_url)
    notes: list[str] = listed.provisional_note()
    row = await catalog_read(store.lookup, key)
    record = None
    if row is not None:
        row, record = await catalog_read(_ready_record, cfg, row)
    if row is None or _restartable(row):
        # New (or its last build failed): the citations and issue log are read here, with the
        # caller's token, so the worker needs none.
        releases = sorted({i.release or PROVISIONAL for i in plan.items})
        build_plan = {
            "items": [{"url": i.url, "rel": str(i.rel), "name": i.name, "size": i.size, "md5": i.md5,
                       "release": i.release, "site": i.site, "month": i.month} for i in plan.items],
            "citations": await _citations(call, query.product, releases, list(query.sites)),
            "issueLog": await _issue_log(call, query.product, notes),
        }
        acct = context.current()
        row, queued = await catalog_read(store.claim, key, product=query.product, selection=selection,
                                         plan=build_plan, planned_bytes=plan.bytes,
                                         requested_by=acct.identity if acct is not None else "anonymous")
        if queued and (note := await catalog_read(store.dispatch, key)):
            notes.append(note)
        claimed, record = await catalog_read(_ready_record, cfg, await _wait_built(call, row, args.wait_seconds))
        row = claimed
        if claimed.state == "building":
            notes.append("The dataset is being built on the server: call again with dataset_id to follow it.")
    elif row.state != READY:
        shared, record = await catalog_read(_ready_record, cfg, await _wait_built(call, row, args.wait_seconds))
        row = shared
        notes.append("Its builds failed too often; an operator can delete it so it is built anew."
                     if _restartable(shared) is False and shared.state == "failed"
                     else "This dataset is being built already (asked for before): this call shares that build.")
    else:
        notes.append("Built before for this selection of the same files: answered from the server's store.")
    return _server_answer(row, record, resolved=listed.resolved, notes=notes, cfg=cfg, endpoint=listed.endpoint,
                          started=started)


def _no_dataset(dataset_id: str) -> EcoError:
    return EcoError("not_found", f"dataset_id: no dataset {dataset_id} on this server (never built, deleted, or "
                    "evicted from the store after a long time unused): call with the selection to build it",
                    details={"field": "dataset_id"})


async def _wait_built(call: CallContext, row: Any, wait_s: float) -> Any:
    """The dataset's row once its build has ended, or as it is after `wait_s` (cut to end before
    the call's deadline): a caller that asks to wait needs no poll for a small build."""
    from tables import store
    from tables.models import BUILDING

    remaining = call.accounting.remaining() if call.accounting is not None else None
    if remaining is not None:
        wait_s = min(wait_s, remaining - STACK_WAIT_RESERVE_S)
    dataset_id = row.dataset_id
    until = time.monotonic() + wait_s
    while row.state == BUILDING and time.monotonic() < until:
        await asyncio.sleep(min(STACK_WAIT_POLL_S, max(0.0, until - time.monotonic())))
        row = await catalog_read(store.lookup, dataset_id)
        if row is None:  # deleted while it built
            raise _no_dataset(dataset_id)
    return row


def _restartable(row: Any) -> bool:
    from tables.models import FAILED
    from tables.store import MAX_ATTEMPTS

    return row.state == FAILED and row.attempts < MAX_ATTEMPTS


# -- eco_query_tables ---------------------------------------------------------------------------
# Read-only SQL over one stacked dataset (tables/query.py's sandboxed DuckDB engine, run in an
# engine worker process by tables/engine.py). The dataset id is eco_stack_tables' answer;
# tables.query.dataset_folder is the one place it becomes a folder. Units come from the variables file (through the
# dataset's record) for bare columns only; citations are those of the releases the query's
# tables were stacked from.

class QueryTablesInput(ToolInput):
    dataset_id: str = Field(min_length=1, max_length=200, description="datasetId from eco_stack_tables.")
    sql: str = Field(min_length=1, max_length=20000, description=(
        "One read-only DuckDB SELECT or WITH; tables by NEON name; in <table>_positioned heightRank 1 is "
        "the tower top or shallowest sensor. Times UTC."))
    limit: RowCap = Field(100, ge=1, le=5000)


class QueryColumn(WireModel):
    name: str
    type: str
    units: str | None = Field(description="Derived from the SQL.")
    units_reason: str | None = Field(None, description="Why units is null.")


class QueryCitation(WireModel):
    release: str
    doi: str | None
    doi_url: str | None = None
    text: str | None
    tables: list[str]


class QueryTablesOutput(Envelope):
    dataset_id: str
    product_code: str
    columns: list[QueryColumn]
    rows: list[list[Any]] = Field(description="Values in the order of columns.")
    returned: int
    total_rows: int | None = Field(description="null: not counted.")
    truncated: bool
    truncated_by: Literal["limit", "bytes"] | None
    seconds: float = Field(description="Time the query took.")
    tables_read: list[str]
    citations: list[QueryCitation]


# Column types eco_plot_tables can put on a y axis: a result with one is offered as a chart.
CHART_NUMBERS = ("double", "int64", "int32", "int16", "int8", "int128", "uint64")
# Bytes kept free under the result budget for the envelope's notes and next steps.
QUERY_ENVELOPE_RESERVE = 2048


def _query_limits(call: CallContext) -> query.Limits:
    """The query's wall time: tables.query_timeout_s, within what is left of the call's deadline
    (waiting for a free engine worker included)."""
    from tables import query

    t = call.cfg.tables
    timeout = t.query_timeout_s
    remaining = call.accounting.remaining() if call.accounting is not None else None
    if remaining is not None:
        timeout = max(0.1, min(timeout, remaining - 0.5))
    return query.Limits(timeout_s=timeout, memory_mb=t.query_memory_mb, threads=t.query_threads,
                        max_depth=t.query_max_depth, engine_memory_mb=t.engine_memory_mb)


def compact_size(payload: Any) -> int:
    """Bytes of the compact JSON the result budget measures (mcp_gateway.budget)."""
    return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def _fit_rows(rows: list[list[Any]], room: int) -> int:
    used = 0
    for n, row in enumerate(rows):
        used += compact_size(row) + 1
        if used > room:
            return n
    return len(rows)


# The envelope beside the rows (everything but the rows and the columns), as the engine worker
# is told to leave room for: the rows stop there, so no more than fits ever reaches this process.
QUERY_ENVELOPE_ESTIMATE = 3072
# Our own paging step: the caller's query wrapped, and the rows from an offset.
_PAGED = re.compile(r"\ASELECT \* FROM \((?P<inner>.*)\) AS q OFFSET (?P<offset>\d+)\Z", re.S)


def _query_citations(result: query.Result) -> list[QueryCitation]:
    by_release: dict[str, list[str]] = {}
    for t in result.tables:
        for rel in sorted(t.releases):
            by_release.setdefault(rel, []).append(t.name)
    known = {c.get("release"): c for c in result.dataset.record.get("citations") or []}
    return [_citation_of(known, rel, tabs) for rel, tabs in sorted(by_release.items())]


def _citation_of(known: dict[Any, dict[str, Any]], release: str, tables: list[str]) -> QueryCitation:
    c = known.get(release) or {}
    return QueryCitation(release=release, doi=bare_doi(c.get("doi")), doi_url=doi_link(c.get("doi")),
                         text=c.get("text"), tables=tables)


async def _rows_read(result: query.Result, run: Callable[[str], concurrent.futures.Future[query.Result]]
                     ) -> tuple[list[QueryCitation], list[str]]:
    """The citations of the releases of the rows the query read, and the quality-flag note: from
    a follow-up of the query's FROM and WHERE (planned by tables.lineage in the engine worker) run
    through the same sandboxed engine; every table's releases, said so, where the query's shape
    does not tell."""
    from tables import lineage

    if not result.tables:
        return [], []
    follow = lineage.FollowUp.from_json(result.follow_up, result.dataset)
    notes: list[str] = []
    got: lineage.Lineage | None = None
    # A table of one release needs no follow-up for its citation: every row read is of it.
    single = follow.table is not None and len(follow.table.releases) <= 1
    if follow.sql is not None and (follow.flags or not single):
        try:
            done = await asyncio.wrap_future(run(follow.sql))
        except EcoError as exc:
            notes.append(f"Which releases the rows came from could not be read ({exc.code}): cited every release of "
                         "the tables read.")
        else:
            got = follow.read(done.rows[0]) if done.rows else None
    if got is not None and got.flagged:
        flags = " or ".join(follow.flags)
        notes.append(f"{got.flagged} of the {got.rows} rows read have {flags} set (they failed NEON's quality "
                     f"assessment) and are in the aggregates of {', '.join(follow.fields)}: add WHERE "
                     f"{' AND '.join(f'{f} = 0' for f in follow.flags)} to leave them out.")
    if got is not None and got.releases is not None and follow.table is not None:
        if not got.rows:
            notes.append("The query read no rows: there is nothing to cite.")
        known = {c.get("release"): c for c in result.dataset.record.get("citations") or []}
        return [_citation_of(known, rel, [follow.table.name]) for rel in sorted(got.releases)], notes
    cites = _query_citations(result)
    if follow.undecidable:
        notes.append(f"Which rows fed the answer is not decidable for a query with {follow.undecidable}: cited every "
                     f"release of the tables read ({', '.join(c.release for c in cites)}).")
    return cites, notes


def _query_steps(args: QueryTablesInput, product: str, sites: list[str], cites: list[QueryCitation], returned: int,
                 truncated: bool) -> list[NextStep]:
    steps: list[NextStep] = []
    if truncated:
        inner = args.sql.strip().rstrip(";").strip()
        offset = returned
        paged = _PAGED.match(inner)
        if paged:  # a page of a page: the same query from further on, never the same rows again
            inner, offset = paged.group("inner"), int(paged.group("offset")) + returned
        steps.append(NextStep(tool="eco_query_tables", arguments={
            "dataset_id": args.dataset_id, "sql": f"SELECT * FROM ({inner}) AS q OFFSET {offset}",
            "limit": args.limit}, why=("The rows after these (add ORDER BY for a stable order); narrower: a WHERE on "
                                       "siteID, a time range or a position, or GROUP BY to aggregate.")))
    for c in cites:
        cite: dict[str, Any] = {"product": product, "format": "bibtex"}
        if c.release == PROVISIONAL:
            cite["provisional"] = True
        else:
            cite["release"] = c.release
        if sites:
            cite["site_codes"] = sites
        steps.append(NextStep(tool="eco_get_citation", arguments=cite,
                              why=f"BibTeX for the {c.release} data these rows come from."))
    return steps


def _own_identity(call: CallContext) -> str | None:
    """The one-way hash of the caller's own token (sent with the call), or None: a caller without
    one shares "anonymous" with every other, so it is shown no dataset ids."""
    acct = call.accounting
    if call.token_source != "request" or acct is None or not acct.token:
        return None
    return acct.identity


def _ready_ids_of(identity: str, limit: int = 200) -> list[str]:
    """The ready datasets first asked for with this token, most recently used first."""
    from tables.models import READY, Dataset

    return list(Dataset.objects.filter(state=READY, requested_by=identity).order_by("-last_used_at").values_list(
        "dataset_id", flat=True)[:limit])


async def query_folder(call: CallContext, dataset_id: str) -> Path:
    """Where eco_query_tables finds a dataset, as eco_stack_tables put it on this transport: over
    HTTP a ready dataset of the server's store (its last use touched, so eviction spares it while
    it is read), on stdio the download directory's datasets. not_found with the known ids."""
    from tables import query

    cfg = call.cfg
    if call.transport == "http":
        from tables import store

        folder = await catalog_read(store.ready_folder, dataset_id, cfg)
        identity = _own_identity(call)
        known = [] if folder is not None or identity is None else await catalog_read(_ready_ids_of, identity)
        where = "in this server's dataset store (eco_stack_tables builds it; wait until its state is ready)"
        if identity is None:
            where += "; suggestions list only datasets a caller's own token asked for"
    else:
        folder = query.dataset_folder(cfg.download_dir, dataset_id)
        known = [] if folder is not None else await asyncio.to_thread(query.dataset_ids, cfg.download_dir)
        where = "in the download directory (eco_stack_tables answers the id of the dataset it stacks)"
    if folder is None:
        raise EcoError("not_found", f"dataset_id: no dataset {dataset_id!r} {where}",
                       details={"field": "dataset_id", "didYouMean": query.suggest(dataset_id, known)
                                if known else []})
    return folder


async def query_tables(args: QueryTablesInput, call: CallContext) -> QueryTablesOutput:
    from tables import engine, query
    cfg = call.cfg
    tcfg = cfg.tables
    folder = await query_folder(call, args.dataset_id)
    budget = cfg.limits.max_result_bytes - QUERY_ENVELOPE_RESERVE - QUERY_ENVELOPE_ESTIMATE
    cancel = threading.Event()
    future = engine.start(folder, args.sql, args.limit, _query_limits(call), budget=budget, cpu_s=tcfg.query_cpu_s,
                          settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb),
                          cancel=cancel)
    try:
        result = await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        cancel.set()  # the caller went away: the engine worker stops the query too
        raise
    record = result.dataset.record
    sel = record.get("selection") or {}
    sites = list(sel.get("siteCodes") or [])
    try:
        cites, read_notes = await _rows_read(result, lambda sql: engine.start(
            folder, sql, 1, _query_limits(call), budget=None, cpu_s=tcfg.query_cpu_s,
            settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb), cancel=cancel))
    except asyncio.CancelledError:
        cancel.set()
        raise
    out = QueryTablesOutput(
        dataset_id=result.dataset.id, product_code=record.get("product", ""),
        columns=[QueryColumn(name=c.name, type=c.type, units=c.units, units_reason=c.units_reason)
                 for c in result.columns], rows=[],
        returned=0, total_rows=result.total, truncated=False, truncated_by=None, seconds=round(result.seconds, 4),
        tables_read=[t.name for t in result.tables], citations=cites,
        source=Source(origin="local", endpoints=[]))
    room = cfg.limits.max_result_bytes - compact_size(out.model_dump(by_alias=True, mode="json")) - QUERY_ENVELOPE_RESERVE
    keep = _fit_rows(result.rows, room)
    rows = result.rows[:keep]
    cut = list(result.cut)
    if keep == 0 and result.rows:  # never an empty page while rows exist: the first, cut to fit
        first, cut = query.cut_row(result.rows[0], room, [c.name for c in result.columns])
        rows, keep = [first], 1
    notes: list[str] = []
    by: Literal["limit", "bytes"] | None = None
    more = result.more or keep < len(result.rows)
    if cut:
        by = "bytes"
        notes.append(f"The value of {', '.join(cut)} in row {keep} was cut (it ends in \u2026) to fit the result "
                     f"budget of {cfg.limits.max_result_bytes} bytes (limits.max_result_bytes); select part of it "
                     "(substr, left) to read the rest.")
    elif keep < len(result.rows) or result.by_bytes:
        by = "bytes"
        notes.append(f"Showing {keep} rows: the next would pass the result budget of {cfg.limits.max_result_bytes} "
                     "bytes (limits.max_result_bytes); select fewer columns or aggregate.")
    elif result.more:
        by = "limit"
        notes.append(f"Showing the first {keep} rows (limit {args.limit}) of "
                     + (f"{result.total}." if result.total is not None else "more (not counted)."))
    out.rows, out.returned = rows, len(rows)
    out.truncated, out.truncated_by = by is not None, by
    out.notes = notes + read_notes
    out.next_steps = _query_steps(args, out.product_code, sites, cites, len(rows), by is not None and more)
    if len(out.columns) >= 2 and any(c.type in CHART_NUMBERS for c in out.columns):
        out.next_steps.append(NextStep(tool="eco_plot_tables", arguments={"dataset_id": args.dataset_id, "sql": args.sql},
                                       why="A chart of these rows (PNG and Vega-Lite), units on its axes."))
    return out


def query_next_step(record: dict[str, Any]) -> NextStep | None:
    """The eco_query_tables step a stacked dataset's answer can offer (eco_stack_tables' nextSteps):
    a monthly mean by site and position for a sensor table, the first rows of another."""
    tables = record.get("tables") or {}
    data = [t for n, t in tables.items() if n not in (names.SENSOR_POSITIONS, names.SCIENCE_REVIEW_FLAGS)]
    if not data:
        return None
    sensors = [t for t in data if t.get("layout") == "sensor"]
    # The positioned views exist only beside a sensor_positions table with positions to join.
    spos = {c["name"] for c in (tables.get(names.SENSOR_POSITIONS) or {}).get("columns") or []}
    positioned = {"siteID", "HOR.VER", "zOffset"} <= spos
    if sensors:
        sensor = min(sensors, key=lambda t: t.get("rows") or 0)  # the coarsest averaging interval
        mean = next((c["name"] for c in sensor["columns"] if c["name"].endswith("Mean") and c["type"] == "double"), None)
        if mean and any(c["name"] == "startDateTime" for c in sensor["columns"]) and positioned:
            # One row per position period: a sensor that moved within a month gives a row for each
            # of its heights, never one height for the month.
            passed, said = _passed(sensor)
            sql = (f"SELECT siteID, verticalPosition, zOffset, positionStartDateTime, date_trunc('month', startDateTime) "
                   f"AS month, avg({mean}) AS {mean}Monthly FROM {_ident(sensor['name'] + layout.POSITIONED)}{passed} "
                   "GROUP BY siteID, verticalPosition, zOffset, positionStartDateTime, month ORDER BY ALL")
            return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"], "sql": sql},
                            why=f"Monthly means by site and sensor height (each period a sensor spent at a height)"
                                f"{said}, with the citation of the data.")
        if mean and any(c["name"] == "startDateTime" for c in sensor["columns"]):
            passed, said = _passed(sensor)
            sql = (f"SELECT siteID, horizontalPosition, verticalPosition, date_trunc('month', startDateTime) AS month, "
                   f"avg({mean}) AS {mean}Monthly FROM {_ident(sensor['name'])}{passed} GROUP BY ALL ORDER BY ALL")
            return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"], "sql": sql},
                            why=f"Monthly means by site and sensor position (no sensor_positions table to give "
                                f"heights){said}, with the citation of the data.")
    first = data[0]
    passed, said = _passed(first)
    return NextStep(tool="eco_query_tables", arguments={"dataset_id": record["datasetId"],
                                                        "sql": f"SELECT * FROM {_ident(first['name'])}{passed} LIMIT 10"},
                    why=f"Ask the stacked tables in SQL (one SELECT){said}, with the citation of the data.")


def _ident(name: str) -> str:
    """A table name as SQL: quoted unless a plain identifier (2DWSD_30min starts with a digit)."""
    return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'


def _passed(table: dict[str, Any]) -> tuple[str, str]:
    """The WHERE that leaves out rows NEON's quality assessment failed, and the words that say so:
    every query the service suggests keeps only rows whose final quality flags are 0."""
    from tables import quality

    cond = quality.passed(c["name"] for c in table.get("columns") or [])
    if cond is None:
        return "", ""
    return f" WHERE {cond}", f", flagged rows left out ({cond}: NEON's quality assessment passed)"


# -- eco_plot_tables ---------------------------------------------------------------------------
# A chart of one read-only query over a stacked dataset. The query runs as eco_query_tables runs
# it (tables.engine: an engine worker process, the same sandbox and limits), first for at most
# POINT_BUDGET rows, which give the columns, their types and units. A longer result is reduced in SQL around the caller's query,
# through the same path: a time series averaged into time buckets (per group), a scatter sampled
# (reservoir, repeatable), bars cut to the first BAR_BUDGET; a note says how. The chart is a
# Vega-Lite specification with its data inline (the structured content) and its PNG rendered from
# that specification (tables.charts), sent as an MCP image content beside the JSON.

# Points a line or scatter shows at most: legible at 640 px, and about 75 KB of data in the spec.
POINT_BUDGET = 1500
# Bars at most: past this a bar chart is no longer read bar by bar.
BAR_BUDGET = 100
# Distinct colour groups at most (one legend entry each).
MAX_GROUPS = 12
# Bytes of the answer kept for everything but the chart's data (envelope, spec, notes).
SPEC_RESERVE = 12_000
# Time bucket widths, in seconds and as a DuckDB interval: the narrowest that keeps each group's
# line within its share of POINT_BUDGET.
BUCKETS = [(60, "1 minute"), (300, "5 minutes"), (600, "10 minutes"), (900, "15 minutes"), (1800, "30 minutes"),
           (3600, "1 hour"), (7200, "2 hours"), (10800, "3 hours"), (21600, "6 hours"), (43200, "12 hours"),
           (86400, "1 day"), (172800, "2 days"), (604800, "7 days"), (1209600, "14 days"), (2629746, "1 month"),
           (7889238, "3 months"), (31556952, "1 year"), (315569520, "10 years")]

ChartKind = Literal["auto", "line", "bar", "scatter"]
Kind = Literal["line", "bar", "scatter"]
Reduced = Literal["none", "time_buckets", "sample", "first_rows", "thinned"]


class PlotTablesInput(ToolInput):
    dataset_id: str = Field(min_length=1, max_length=200, description="datasetId from eco_stack_tables.")
    sql: str = Field(min_length=1, max_length=20000, description=(
        "One read-only DuckDB SELECT or WITH, as for eco_query_tables; its columns are what x, y and color name."))
    chart: ChartKind = Field("auto", description=(
        "line (over time), bar (by group), scatter; auto: a line when x is a time, bars when x is text, else scatter."))
    x: str | None = Field(None, max_length=200, description="Column for x. Default: a time column, else the first.")
    y: str | None = Field(None, max_length=200, description="Numeric column for y. Default: the last other numeric one.")
    color: str | None = Field(None, max_length=200, description=(
        "Column giving one colour per group. Default: the other text columns together, when they make at most 12 groups."))
    title: str | None = Field(None, max_length=200)


class PlotAxis(WireModel):
    column: str
    type: str
    units: str | None
    title: str = Field(description="As on the chart: units in brackets, times (UTC).")


class PlotImage(WireModel):
    mime_type: str
    width: int
    height: int
    bytes: int


class PlotTablesOutput(Envelope):
    dataset_id: str
    product_code: str
    chart: Literal["line", "bar", "scatter"]
    x: PlotAxis
    y: PlotAxis
    color: list[str] = Field(description="Columns whose values make the colour groups.")
    groups: int
    points: int = Field(description="Points (or bars) drawn.")
    query_rows: int | None = Field(description="Rows the query gave; null: not counted.")
    reduced: Reduced = Field(description="How a long result was brought to the point budget (notes say more).")
    bucket: str | None = Field(description="Time bucket width when averaged into time buckets.")
    image: PlotImage = Field(description="The PNG sent as the image content of this answer.")
    vega_lite: dict[str, Any] = Field(description="Vega-Lite specification of the chart with its data (the PNG's source).")
    tables_read: list[str]
    citations: list[QueryCitation]
    seconds: float = Field(description="Time the queries and the rendering took.")

    _png: bytes = PrivateAttr(default=b"")

    @property
    def png(self) -> bytes:
        """The rendered chart, sent as an MCP image content (mcp_gateway.calls) and not in the JSON."""
        return self._png


async def _plot_query(call: CallContext, folder: Path, sql: str, limit: int) -> query.Result:
    """One query, run as eco_query_tables runs it (families.tables.query_tables): in an engine
    worker process under the same limits, its rows within the chart's share of the hard result
    budget (the chart's data is the answer's bulk)."""
    from tables import engine

    tcfg = call.cfg.tables
    cancel = threading.Event()
    future = engine.start(folder, sql, limit, _query_limits(call),
                          budget=call.cfg.limits.hard_max_result_bytes - SPEC_RESERVE, cpu_s=tcfg.query_cpu_s,
                          settings=engine.Settings(workers=tcfg.engine_workers, memory_mb=tcfg.engine_memory_mb),
                          cancel=cancel)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        cancel.set()  # the caller went away: the engine worker stops the query too
        raise


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column(name: str, columns: list[query.Column], field: str) -> query.Column:
    for c in columns:
        if c.name == name:
            return c
    folded = [c for c in columns if c.name.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    from tables.query import suggest

    names = [c.name for c in columns]
    raise EcoError("invalid_argument", f"{field}: the query has no column {name!r} (it has {', '.join(names)})",
                   details={"field": field, "didYouMean": suggest(name, names) or names[:10]},
                   hint=f"Name one of the query's columns in {field}, or leave it out for the default.")


def _pick(args: PlotTablesInput, columns: list[query.Column], rows: list[list[Any]]
          ) -> tuple[Kind, query.Column, query.Column, list[query.Column], list[str]]:
    """The chart's kind, x, y and colour columns; notes on what was chosen."""
    from tables.charts import NUMERIC, TEMPORAL

    notes: list[str] = []
    if len(columns) < 2 and (args.x is None or args.y is None):
        raise EcoError("invalid_argument", "sql: a chart needs at least two columns (x and y)",
                       details={"field": "sql"}, hint="Select an x column (a time, a group) and a numeric y column.")
    if args.x is not None:
        x = _column(args.x, columns, "x")
    else:
        # The time column with the most distinct values (a period's start repeats; the month
        # varies), the later of equals; else the first column.
        times = [(len({r[i] for r in rows}), i) for i, c in enumerate(columns) if c.type in TEMPORAL]
        x = columns[max(times)[1]] if times else columns[0]
    color_given = _column(args.color, columns, "color") if args.color is not None else None
    if args.y is not None:
        y = _column(args.y, columns, "y")
        if y.type not in NUMERIC:
            raise EcoError("invalid_argument", f"y: column {y.name!r} is {y.type}, not a number",
                           details={"field": "y", "type": y.type},
                           hint="Name a numeric column for y (or cast it in the SQL).")
    else:
        # The last numeric column: a query names its measure (an aggregate) after its keys.
        y_found = next((c for c in reversed(columns) if c.type in NUMERIC and c is not x and c is not color_given), None)
        if y_found is None:
            raise EcoError("invalid_argument", "y: the query has no numeric column besides x to plot",
                           details={"field": "y", "columns": [c.name for c in columns]},
                           hint="Select a numeric column (an average, a count, a measurement).")
        y = y_found
    kind: Kind
    if args.chart != "auto":
        kind = args.chart
    elif x.type in TEMPORAL:
        kind = "line"
    elif x.type in NUMERIC:
        kind = "scatter"
    else:
        kind = "bar"
    if color_given is not None:
        groups = [color_given]
    else:
        # Text columns besides x and y are the groups a reader tells apart (site, position).
        candidates = [c for c in columns if c is not x and c is not y and c.type == "string"]
        at = [columns.index(c) for c in candidates]
        distinct = {tuple(r[i] for i in at) for r in rows}
        if candidates and len(distinct) <= MAX_GROUPS:
            groups = candidates
        else:
            groups = []
            if candidates:
                notes.append(f"Not coloured by {', '.join(c.name for c in candidates)}: {len(distinct)} groups or more "
                             f"(at most {MAX_GROUPS}); name a column in color, or filter in the SQL.")
    return kind, x, y, groups, notes


def _group_value(values: list[Any]) -> str:
    return " / ".join("null" if v is None else str(v) for v in values)


def _bucket_for(seconds: float, per_group: int) -> tuple[int, str]:
    need = seconds / max(1, per_group - 1)
    return next(((s, w) for s, w in BUCKETS if s >= need), BUCKETS[-1])


def _seconds(v: Any) -> float:
    if isinstance(v, datetime):
        return v.timestamp()
    if isinstance(v, date):
        return datetime(v.year, v.month, v.day).timestamp()
    if isinstance(v, str):
        return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
    return float(v)


async def plot_tables(args: PlotTablesInput, call: CallContext) -> PlotTablesOutput:
    from tables import charts

    started = time.monotonic()
    folder = await query_folder(call, args.dataset_id)
    first = await _plot_query(call, folder, args.sql, POINT_BUDGET)
    kind, x, y, groups, notes = _pick(args, first.columns, first.rows)
    names = [c.name for c in first.columns]
    inner = args.sql.strip().rstrip(";").strip()
    gsel = "".join(f", {_ident(g.name)}" for g in groups)
    reduced: Reduced = "none"
    bucket: str | None = None
    columns, rows = names, first.rows
    total = first.total
    if kind == "bar" and len(rows) > BAR_BUDGET:
        rows, reduced = rows[:BAR_BUDGET], "first_rows"
        notes.append(f"Showing the first {BAR_BUDGET} bars of {total if total is not None else 'more'} rows: "
                     "aggregate with GROUP BY or filter in the SQL for fewer.")
    elif (first.more or first.by_bytes) and kind == "line" and x.type in charts.TEMPORAL:
        gcount = f", count(DISTINCT ({', '.join(_ident(g.name) for g in groups)}))" if groups else ""
        stats = await _plot_query(call, folder, f"SELECT min({_ident(x.name)}), max({_ident(x.name)}), count(*){gcount} "
                                         f"FROM ({inner}) AS q WHERE {_ident(x.name)} IS NOT NULL", 1)
        lo, hi, total = stats.rows[0][0], stats.rows[0][1], stats.rows[0][2]
        ngroups = max(1, stats.rows[0][3] if groups else 1)
        span = _seconds(hi) - _seconds(lo) if lo is not None and hi is not None else 0
        width_s, bucket = _bucket_for(span, POINT_BUDGET // ngroups)
        if x.type == "date" and width_s < 86400:
            width_s, bucket = 86400, "1 day"
        sql = (f"SELECT time_bucket(INTERVAL '{bucket}', {_ident(x.name)}) AS {_ident(x.name)}{gsel}, avg({_ident(y.name)}) AS "
               f"{_ident(y.name)} FROM ({inner}) AS q WHERE {_ident(x.name)} IS NOT NULL GROUP BY ALL ORDER BY ALL")
        agg = await _plot_query(call, folder, sql, POINT_BUDGET)
        columns, rows, reduced = [c.name for c in agg.columns], agg.rows, "time_buckets"
        notes.append(f"The query's {total} rows are averaged into buckets of {bucket} (mean of {y.name} per bucket"
                     + (" and group" if groups else "") + f"): {len(rows)} points, within the budget of {POINT_BUDGET}.")
        if agg.more or agg.by_bytes:
            notes.append(f"Only the first {POINT_BUDGET} buckets are drawn: narrow the time range in the SQL.")
    elif first.more or first.by_bytes:
        order = f" ORDER BY {_ident(x.name)}" if kind == "line" else ""
        sql = (f"SELECT {_ident(x.name)}, {_ident(y.name)}{gsel} FROM ({inner}) AS q USING SAMPLE reservoir({POINT_BUDGET} "
               f"ROWS) REPEATABLE (43){order}")
        sample = await _plot_query(call, folder, sql, POINT_BUDGET)
        columns, rows, reduced = [c.name for c in sample.columns], sample.rows, "sample"
        notes.append(f"A random sample of {len(rows)} of the query's "
                     f"{total if total is not None else 'many'} rows is drawn (reservoir, repeatable), within the "
                     f"budget of {POINT_BUDGET} points.")
    xi, yi = columns.index(x.name), columns.index(y.name)
    gi = [columns.index(g.name) for g in groups]
    values: list[dict[str, Any]] = []
    for r in rows:
        point: dict[str, Any] = {"x": r[xi], "y": r[yi]}
        if gi:
            point["c"] = _group_value([r[i] for i in gi])
        values.append(point)
    room = call.cfg.limits.hard_max_result_bytes - SPEC_RESERVE
    size = compact_size(values)
    if size > room:
        step = math.ceil(size / room)
        values, reduced = values[::step], "thinned"
        notes.append(f"Every {step}th point is drawn: the data must fit the result budget of "
                     f"{call.cfg.limits.hard_max_result_bytes} bytes (limits.hard_max_result_bytes).")
    ngroups = len({v.get("c") for v in values}) if gi else 0
    if ngroups > MAX_GROUPS:
        notes.append(f"{ngroups} colour groups: the legend lists only those that fit; filter in the SQL for fewer.")
    record = first.dataset.record
    sites = list((record.get("selection") or {}).get("siteCodes") or [])
    product = record.get("product", "")
    cites = _query_citations(first)
    xf = charts.Field("x", charts.axis_title(x.name, x.type, x.units), charts.vega_type(x.type, kind, "x"))
    yf = charts.Field("y", charts.axis_title(y.name, y.type, y.units), "quantitative")
    group_title = " / ".join(g.name for g in groups)
    cf = charts.Field("c", group_title, "nominal") if groups else None
    word = {"line": "over", "bar": "by", "scatter": "against"}[kind]
    title = args.title or f"{y.name} {word} {x.name}" + (f", by {group_title}" if groups else "")
    where = f"{product}" + (f" at {', '.join(sites)}" if sites else "")
    texts = [(c.text or f"NEON {product}, {c.release}") + (f" https://doi.org/{c.doi}" if c.doi and c.doi not in
                                                               (c.text or "") else "") for c in cites]
    subtitle = [where, *charts.caption([f"Data: {t}" for t in texts])]
    vl = charts.spec(kind, values, xf, yf, cf, title=title, subtitle=subtitle)
    png = await asyncio.to_thread(charts.render_png, vl)
    w, h = charts.png_size(png)
    if any(v["y"] is None for v in values):
        notes.append(f"Rows where {y.name} is null are gaps in the chart.")
    steps = [NextStep(tool="eco_query_tables", arguments={"dataset_id": args.dataset_id, "sql": args.sql},
                      why="The numbers behind the chart, with their units and citation.")]
    steps += _query_steps(QueryTablesInput(dataset_id=args.dataset_id, sql=args.sql), product, sites, cites, 0, False)
    out = PlotTablesOutput(
        dataset_id=first.dataset.id, product_code=product, chart=kind,
        x=PlotAxis(column=x.name, type=x.type, units=x.units, title=xf.title),
        y=PlotAxis(column=y.name, type=y.type, units=y.units, title=yf.title),
        color=[g.name for g in groups], groups=ngroups, points=len(values), query_rows=total, reduced=reduced,
        bucket=bucket, image=PlotImage(mime_type="image/png", width=w, height=h, bytes=len(png)), vega_lite=vl,
        tables_read=[t.name for t in first.tables], citations=cites, seconds=round(time.monotonic() - started, 4),
        notes=notes, next_steps=steps, source=Source(origin="local", endpoints=[]))
    out._png = png
    return out
