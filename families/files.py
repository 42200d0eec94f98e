"""The files family: eco_list_files. Which data files a product has for some sites and months,
with their kinds, sizes, MD5s and signed URLs (token required).

The download family selects data files the same way (downloads/selection.py); the listing itself
is downloads/files.py, which both families read.
"""

from __future__ import annotations

import calendar
import time
from typing import Annotated, Literal
from urllib.parse import parse_qs, urlsplit

from pydantic import Field

from catalog.access import catalog_index
from catalog.availability import Window
from catalog.checks import bad
from catalog.citation_text import cite_steps
from catalog.index import CatalogIndex
from catalog.months import MONTH_PATTERN, month_index
from catalog.resolve import PROVISIONAL
from downloads.files import ExternalData, FileRecord, Listing, ListingQuery, Package, PackageLink, list_site_months
from downloads.selection import FileSelectors, select
from eco_core.bounds import Configured
from eco_core.config import Downloads
from eco_core.errors import EcoError
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, WireModel, page
from families.call import CallContext

Detail = Literal["files", "site_months", "summary"]

# Room the envelope, summary and package links of a listing take besides its files: URLs are
# dropped until the files fit the result budget minus this, before the gateway's generic
# trimming would start dropping whole files.
ENVELOPE_ROOM = 6000


# -- eco_list_files ----------------------------------------------------------------------------

class SiteMonthRow(WireModel):
    site_code: str
    month: str
    release: str
    files: int
    bytes: int


class FileSummary(WireModel):
    files: int
    bytes: int
    site_months: int
    by_kind: dict[str, int] = Field(default_factory=dict)
    by_release: dict[str, int] = Field(default_factory=dict)


class ListFilesInput(FileSelectors):
    product: str = Field(max_length=300)
    site_codes: Annotated[list[str], Configured("limits.max_sites_per_call", "maxItems")] = Field(
        min_length=1)
    start_month: str = Field(pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    package: Package = "basic"
    release: str | None = Field(None, max_length=64, description="Default: latest per month.")
    include_provisional: bool = True
    detail: Detail = "files"
    include_urls: bool = True
    filename: str | None = Field(None, max_length=300, description="One exact name (one site-month).")
    limit: DefaultLimit = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)

    def keep(self, f: FileRecord) -> bool:
        if self.filename is not None:
            return f.name == self.filename  # one file by its name: the other selectors do not apply
        return super().keep(f)


class ListFilesOutput(Envelope):
    product_code: str
    package: Package
    release: str | None
    include_provisional: bool
    site_codes: list[str]
    window: Window
    detail: Detail
    summary: FileSummary
    site_months: list[SiteMonthRow] | None
    files: list[FileRecord] | None
    packages: list[PackageLink]
    external_data: list[ExternalData]
    url_expires_at: str | None
    urls_elided: bool
    curl_hint: str | None
    page: Page | None


async def list_files(args: ListFilesInput, call: CallContext) -> ListFilesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    query, resolved = select(idx, cfg, args)
    if args.filename is not None and len(query.sites) * len(query.month_list) > 1:
        raise bad("filename", "needs exactly one site and one month")
    listing = await list_site_months(call.client, cfg, query)
    matching = [f for f in listing.files if args.keep(f)]
    if args.filename is not None and not matching:
        raise EcoError("not_found", f"filename: no file {args.filename!r} in {query.product} at {query.sites[0]} "
                       f"for {query.start}", details={"field": "filename"})
    notes: list[str] = []
    rows: list[SiteMonthRow] | None = None
    files: list[FileRecord] | None = None
    pg: Page | None = None
    elided = False
    if args.detail == "files":
        chunk = matching[args.offset:args.offset + args.limit]
        pg = page(args.offset, args.limit, len(chunk), len(matching))
        files = [f if args.include_urls else f.model_copy(update={"url": None}) for f in chunk]
        elided = elide_urls(files, cfg.limits.max_result_bytes - ENVELOPE_ROOM)
        if elided:
            notes.append("URLs were dropped from the end of this page to fit the result budget (urlsElided); "
                         "ask for a smaller limit or use filename for one file's URL.")
    elif args.detail == "site_months":
        all_rows = _site_month_rows(matching, listing)
        rows = all_rows[args.offset:args.offset + args.limit]
        pg = page(args.offset, args.limit, len(rows), len(all_rows))
    absent = [(s, m) for s in query.sites for m in query.month_list if (s, m) not in listing.site_months]
    provisional = _provisional_only(idx, query, listing, absent)
    if provisional:
        shown = [f"{s} {m}" for s, m in provisional]
        notes.append("Only provisional data (left out: include_provisional is false) for: "
                     + (", ".join(shown) if len(shown) <= 12 else f"{len(shown)} site-months") + ".")
    missing = [f"{s} {m}" for s, m in absent if (s, m) not in set(provisional)]
    if missing and len(missing) <= 12:
        notes.append(f"No data for: {', '.join(missing)}.")
    elif missing:
        notes.append(f"No data for {len(missing)} of {len(query.sites) * len(query.month_list)} site-months.")
    expiries = [e for e in (url_expiry(f.url) for f in matching) if e is not None] if args.include_urls else []
    summary = _summary(matching)
    return ListFilesOutput(
        product_code=query.product, package=query.package, release=query.release,
        include_provisional=args.include_provisional, site_codes=list(query.sites),
        window=Window(start_month=query.start, end_month=query.end), detail=args.detail, summary=summary,
        site_months=rows, files=files, packages=listing.packages, external_data=listing.external_data,
        url_expires_at=_iso(min(expiries)) if expiries else None, urls_elided=elided,
        curl_hint=curl_hint(files[0] if files else None), page=pg,
        resolved=resolved, notes=notes,
        next_steps=_steps(args, query.product, matching, pg, cfg.downloads, notes, stdio=call.transport == "stdio"),
        source=Source(origin="upstream", api_base_url=cfg.eco.base_url))


def _provisional_only(idx: CatalogIndex, query: ListingQuery, listing: Listing,
                      absent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The site-months of `absent` that hold only provisional data (left out because
    include_provisional is false): as the upstream answered, else as the availability catalog says."""
    if query.include_provisional or query.release is not None:
        return []
    entry = idx.by_code.get(query.product)
    out = []
    for site, month in absent:
        cell = entry.cells.get(site) if entry is not None else None
        spans = cell.by_release.get(PROVISIONAL, ()) if cell is not None else ()
        k = month_index(month)
        if (site, month) in listing.provisional_only or any(a <= k <= b for a, b in spans):
            out.append((site, month))
    return out


def _steps(args: ListFilesInput, product: str, matching: list[FileRecord], pg: Page | None,
           caps: Downloads, notes: list[str], *, stdio: bool) -> list[NextStep]:
    steps: list[NextStep] = []
    if matching:
        # HTTP neither lists nor runs the download tool: there the signed URLs are the download.
        if stdio:
            step = _download_step(args, matching, caps)
            if step is not None:
                steps.append(step)
            else:
                notes.append(f"No download is suggested: one site-month here is above one download's caps "
                             f"({caps.max_files_per_call} files, {caps.max_bytes_per_call} bytes, "
                             f"{caps.max_file_bytes} bytes a file); narrow with kind, table, hor, ver or name_contains.")
        steps += cite_steps(product, {f.release for f in matching if f.release}, why="How to cite the data")
    if pg is not None and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_list_files", arguments={**more, "offset": pg.next_offset},
                              why="The next page."))
    return steps


def _download_step(args: ListFilesInput, matching: list[FileRecord], caps: Downloads) -> NextStep | None:
    """The download of this selection when it fits one download call's caps; else of the first
    site's first months that fit (the rest is the same call over the next months and sites);
    None when not even one site-month fits."""
    sel = args.model_dump(exclude_defaults=True, exclude={"detail", "include_urls", "limit", "offset", "filename"})
    if args.filename:
        sel["name_contains"] = args.filename  # the download tool selects one file by its name

    def fits(files: list[FileRecord]) -> bool:
        return (len(files) <= caps.max_files_per_call and sum(f.size for f in files) <= caps.max_bytes_per_call
                and all(f.size <= caps.max_file_bytes for f in files))

    if fits(matching):
        return NextStep(tool="eco_download_files", arguments=sel,
                        why=f"Download these {len(matching)} files, MD5-verified.")
    site = matching[0].site_code  # files come ordered by site, month and name
    months_of_site = list(dict.fromkeys(f.month for f in matching if f.site_code == site))
    taken: list[str] = []
    for month in months_of_site:
        if not fits([f for f in matching if f.site_code == site and f.month in {*taken, month}]):
            break
        taken.append(month)
    if not taken:
        return None
    part = [f for f in matching if f.site_code == site and f.month in taken]
    sel.update(site_codes=[site], start_month=taken[0], end_month=taken[-1])
    return NextStep(tool="eco_download_files", arguments=sel, why=(
        f"Download the first {len(part)} of these {len(matching)} files ({site}, {taken[0]} to {taken[-1]}), "
        f"MD5-verified: one download takes at most {caps.max_files_per_call} files and "
        f"{caps.max_bytes_per_call} bytes; call it again with the next months and sites for the rest."))


def _site_month_rows(files: list[FileRecord], listing: Listing) -> list[SiteMonthRow]:
    sizes: dict[tuple[str, str], list[int]] = {}
    for f in files:
        sizes.setdefault((f.site_code, f.month), []).append(f.size)
    return [SiteMonthRow(site_code=s, month=m, release=listing.site_months.get((s, m), PROVISIONAL),
                         files=len(each), bytes=sum(each)) for (s, m), each in sorted(sizes.items())]


def _summary(files: list[FileRecord]) -> FileSummary:
    by_kind: dict[str, int] = {}
    by_release: dict[str, int] = {}
    for f in files:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
        by_release[f.release] = by_release.get(f.release, 0) + 1
    months_with_files = {(f.site_code, f.month) for f in files}
    return FileSummary(files=len(files), bytes=sum(f.size for f in files), site_months=len(months_with_files),
                       by_kind=dict(sorted(by_kind.items())), by_release=dict(sorted(by_release.items())))


def url_expiry(url: str | None) -> float | None:
    """When a V4-signed URL expires (epoch seconds), read from its own query."""
    if not url:
        return None
    q = parse_qs(urlsplit(url).query)
    stamp, ttl = q.get("X-Goog-Date", [None])[0], q.get("X-Goog-Expires", [None])[0]
    if not stamp or not ttl or not ttl.isdigit():
        return None
    try:
        return calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ")) + int(ttl)
    except ValueError:
        return None


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def elide_urls(files: list[FileRecord], budget: int) -> bool:
    """Drop URLs from the end of the page until the files fit `budget` bytes of JSON; True if any
    was dropped. URLs are most of a record's size, so this keeps every file's name, size and MD5
    before the generic budget would drop whole files."""
    sizes = [len(f.model_dump_json(by_alias=True)) for f in files]
    total = sum(sizes) + len(files)
    elided = False
    for i in range(len(files) - 1, -1, -1):
        if total <= budget:
            break
        url = files[i].url
        if url:
            files[i] = files[i].model_copy(update={"url": None})
            total -= len(url) - 2  # "url":"..." becomes "url":null
            elided = True
    return elided


def curl_hint(f: FileRecord | None) -> str | None:
    if f is None or not f.url:
        return None
    return (f"curl -fL --retry 3 -C - -o '{f.name}' '{f.url}'   # signed URL: no token needed; "
            "same for every url above")
