"""The files family's reads (eco_list_files, and the plan of eco_download_files): which files
a product has for some sites and months, with their kinds, sizes, MD5s and signed URLs.

    await list_site_months(client, sel)     -> Listing (every matching file, all pages)
    await list_files(idx=, client=, ...)    -> Answer[FilesRecord] (one page of it)

One site and one month is one `GET /data/{product}/{site}/{month}` (it also carries the package
ZIP links); anything wider is one `POST /data/query`. The caps (sites per call, site-months per
query) are checked before any request. Filters are applied locally on the parsed names
(`kinds.classify`), so a narrower filter never costs another request.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, quote, urlsplit

from pydantic import Field

from catalog import months
from catalog.availability import Window
from catalog.checks import bad
from catalog.index import CatalogIndex
from catalog.resolve import PROVISIONAL, resolve_product, resolve_release, resolve_site
from downloads.kinds import Kind, classify
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import Answer, Page, WireModel, page
from upstream import models as um

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

Package = Literal["basic", "expanded"]
Detail = Literal["files", "site_months", "summary"]

# Room the envelope, summary and package links of a listing take besides its files: URLs are
# dropped until the files fit the result budget minus this, before the gateway's generic
# trimming would start dropping whole files.
ENVELOPE_ROOM = 6000


class FileRecord(WireModel):
    name: str
    kind: Kind
    site_code: str
    month: str
    release: str
    table: str | None = None
    hor: str | None = None
    ver: str | None = None
    tmi: str | None = None
    size: int
    md5: str | None = None
    url: str | None = None


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


class PackageLink(WireModel):
    site_code: str
    month: str
    type: str
    url: str


class ExternalData(WireModel):
    site_code: str
    month: str
    name: str
    type: str | None = None
    url: str | None = None


class FilesRecord(WireModel):
    """eco_list_files' answer without the envelope."""

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


@dataclass(frozen=True)
class Filters:
    kind: Kind | None = None
    table: str | None = None
    hor: str | None = None
    ver: str | None = None
    tmi: str | None = None
    name_contains: str | None = None
    filename: str | None = None

    def keep(self, f: FileRecord) -> bool:
        if self.filename is not None:
            return f.name == self.filename
        if self.kind is not None and f.kind != self.kind:
            return False
        if self.table is not None and (f.table or "").lower() != self.table.lower():
            return False
        for want, got in ((self.hor, f.hor), (self.ver, f.ver), (self.tmi, f.tmi)):
            if want is not None and (got is None or got.lstrip("0") != want.lstrip("0")):
                return False
        return self.name_contains is None or self.name_contains.lower() in f.name.lower()


@dataclass(frozen=True)
class Selection:
    """What to list, resolved and checked."""

    product: str
    sites: tuple[str, ...]
    start: str
    end: str
    package: Package = "basic"
    release: str | None = None
    include_provisional: bool = True
    filters: Filters = Filters()

    @property
    def month_list(self) -> list[str]:
        a, b = months.month_index(self.start), months.month_index(self.end)
        return [months.month_from_index(k) for k in range(a, b + 1)]


@dataclass
class Listing:
    files: list[FileRecord] = field(default_factory=list)
    packages: list[PackageLink] = field(default_factory=list)
    external_data: list[ExternalData] = field(default_factory=list)
    # (site, month) -> release, for every site-month the upstream answered with data.
    site_months: dict[tuple[str, str], str] = field(default_factory=dict)
    endpoint: str = ""


def select(idx: CatalogIndex, cfg: EcoConfig, *, product: str, site_codes: list[str], start_month: str,
           end_month: str | None, package: Package = "basic", release: str | None = None,
           include_provisional: bool = True, filters: Filters = Filters()) -> tuple[Selection, dict[str, Any]]:
    """Resolve names and check the caps; nothing is sent. Returns the selection and `resolved`."""
    if not site_codes:
        raise bad("site_codes", "give 1 to 30 site codes or names")
    lim = cfg.limits
    if len(site_codes) > lim.max_sites_per_call:
        raise EcoError("query_too_large", f"site_codes: {len(site_codes)} sites, at most {lim.max_sites_per_call} "
                       "per call", details={"field": "site_codes", "sites": len(site_codes),
                                            "maxSites": lim.max_sites_per_call})
    end = end_month or start_month
    if months.month_index(end) < months.month_index(start_month):
        raise bad("end_month", f"{end} is before start_month {start_month}")
    prod = resolve_product(product, index=idx)
    sites = [resolve_site(s, index=idx, field="site_codes") for s in site_codes]
    codes = tuple(dict.fromkeys(s.code for s in sites))
    span = months.month_index(end) - months.month_index(start_month) + 1
    if span * len(codes) > lim.max_site_months_per_query:
        raise EcoError("query_too_large",
                       f"site_codes x months: {len(codes)} sites x {span} months = {span * len(codes)} site-months, "
                       f"at most {lim.max_site_months_per_query}; narrow the sites or the months",
                       details={"siteMonths": span * len(codes), "maxSiteMonths": lim.max_site_months_per_query})
    resolved: dict[str, Any] = {"product": prod.echo()}
    if any(s.matched_by != "code" for s in sites):
        resolved["siteCodes"] = [s.echo() for s in sites]
    tag = None
    if release is not None:
        rel = resolve_release(release, index=idx)
        tag = rel.tag
        resolved["release"] = {"input": release, "release": tag}
    if filters.filename is not None and (len(codes) > 1 or span > 1):
        raise bad("filename", "needs exactly one site and one month")
    sel = Selection(prod.code, codes, start_month, end, package, tag, include_provisional, filters)
    return sel, resolved


def _package_of(f: um.DataFile) -> str | None:
    path = urlsplit(f.url).path
    for p in ("basic", "expanded"):
        if f"/{p}/" in path:
            return p
    return None


def _record(f: um.DataFile, site: str, month: str, release: str) -> FileRecord:
    parts = classify(f.name)
    return FileRecord(name=f.name, kind=parts.kind, site_code=site, month=month, release=release, table=parts.table,
                      hor=parts.hor, ver=parts.ver, tmi=parts.tmi, size=f.size, md5=f.md5, url=f.url)


def package_url(cfg: EcoConfig, product: str, site: str, month: str, package: str, release: str | None) -> str:
    url = f"{cfg.eco.base_url}/data/package/{quote(product, safe='')}/{site}/{month}?package={package}"
    return url + (f"&release={release}" if release else "")


async def list_site_months(client: UpstreamClient, cfg: EcoConfig, sel: Selection) -> Listing:
    """Every file of the selection that passes its filters (one upstream request)."""
    out = Listing()
    if len(sel.sites) == 1 and sel.start == sel.end:
        site, month = sel.sites[0], sel.start
        got = await client.data_listing(sel.product, site, month, package=sel.package, release=sel.release)
        out.endpoint = "GET /data/{productCode}/{siteCode}/{yearMonth}"
        rel = got.release or sel.release or PROVISIONAL
        if not got.files or (rel == PROVISIONAL and not sel.include_provisional):
            return out
        out.site_months[(site, month)] = rel
        out.files = [_record(f, site, month, rel) for f in got.files if _package_of(f) in (sel.package, None)]
        out.packages = [PackageLink(site_code=site, month=month, type=p.type, url=p.url) for p in got.packages
                        if p.type == sel.package]
        out.external_data = [ExternalData(site_code=site, month=month, name=e.name, type=e.type, url=e.url)
                             for e in got.external_data]
    else:
        query = um.DataQueryRequest(product_code=sel.product, site_codes=list(sel.sites), start_date_month=sel.start,
                                    end_date_month=sel.end, release=sel.release, package=sel.package,
                                    include_provisional=sel.include_provisional)
        result = await client.data_query(query)
        out.endpoint = "POST /data/query"
        for block in result.releases:
            if block.release == PROVISIONAL and not sel.include_provisional:
                continue
            for pkg in block.packages:
                out.site_months[(pkg.site_code, pkg.month)] = block.release
                out.files += [_record(f, pkg.site_code, pkg.month, block.release) for f in pkg.files]
                # The query answer has no ZIP links; NEON's package route is the same for every site-month.
                out.packages.append(PackageLink(
                    site_code=pkg.site_code, month=pkg.month, type=sel.package,
                    url=package_url(cfg, sel.product, pkg.site_code, pkg.month, sel.package, sel.release)))
    out.files = sorted((f for f in out.files if sel.filters.keep(f)), key=lambda f: (f.site_code, f.month, f.name))
    out.packages.sort(key=lambda p: (p.site_code, p.month))
    return out


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


def _summary(listing: Listing) -> FileSummary:
    by_kind: dict[str, int] = {}
    by_release: dict[str, int] = {}
    for f in listing.files:
        by_kind[f.kind] = by_kind.get(f.kind, 0) + 1
        by_release[f.release] = by_release.get(f.release, 0) + 1
    months_with_files = {(f.site_code, f.month) for f in listing.files}
    return FileSummary(files=len(listing.files), bytes=sum(f.size for f in listing.files),
                       site_months=len(months_with_files), by_kind=dict(sorted(by_kind.items())),
                       by_release=dict(sorted(by_release.items())))


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


async def list_files(*, idx: CatalogIndex, client: UpstreamClient, cfg: EcoConfig, product: str,
                     site_codes: list[str], start_month: str, end_month: str | None, package: Package,
                     release: str | None, include_provisional: bool, filters: Filters, detail: Detail,
                     include_urls: bool, limit: int, offset: int) -> Answer[FilesRecord]:
    sel, resolved = select(idx, cfg, product=product, site_codes=site_codes, start_month=start_month,
                           end_month=end_month, package=package, release=release,
                           include_provisional=include_provisional, filters=filters)
    listing = await list_site_months(client, cfg, sel)
    notes: list[str] = []
    if filters.filename is not None and not listing.files:
        raise EcoError("not_found", f"filename: no file {filters.filename!r} in {sel.product} at {sel.sites[0]} "
                       f"for {sel.start}", details={"field": "filename"})
    expiries = [e for e in (url_expiry(f.url) for f in listing.files) if e is not None]
    rows: list[SiteMonthRow] | None = None
    files: list[FileRecord] | None = None
    pg: Page | None = None
    elided = False
    if detail == "files":
        chunk = listing.files[offset:offset + limit]
        pg = page(offset, limit, len(chunk), len(listing.files))
        files = [f if include_urls else f.model_copy(update={"url": None}) for f in chunk]
        elided = elide_urls(files, cfg.limits.max_result_bytes - ENVELOPE_ROOM)
        if elided:
            notes.append("URLs were dropped from the end of this page to fit the result budget (urlsElided); "
                         "ask for a smaller limit or use filename for one file's URL.")
    elif detail == "site_months":
        counts: dict[tuple[str, str], list[int]] = {}
        for f in listing.files:
            counts.setdefault((f.site_code, f.month), []).append(f.size)
        all_rows = [SiteMonthRow(site_code=s, month=m, release=listing.site_months.get((s, m), PROVISIONAL),
                                 files=len(sizes), bytes=sum(sizes)) for (s, m), sizes in sorted(counts.items())]
        rows = all_rows[offset:offset + limit]
        pg = page(offset, limit, len(rows), len(all_rows))
    missing = [f"{s} {m}" for s in sel.sites for m in sel.month_list if (s, m) not in listing.site_months]
    if missing and len(missing) <= 12:
        notes.append(f"No data for: {', '.join(missing)}.")
    elif missing:
        notes.append(f"No data for {len(missing)} of {len(sel.sites) * len(sel.month_list)} site-months.")
    if not include_urls:
        expiries = []
    record = FilesRecord(
        product_code=sel.product, package=sel.package, release=sel.release, include_provisional=include_provisional,
        site_codes=list(sel.sites), window=Window(start_month=sel.start, end_month=sel.end), detail=detail,
        summary=_summary(listing), site_months=rows, files=files, packages=listing.packages,
        external_data=listing.external_data, url_expires_at=_iso(min(expiries)) if expiries else None,
        urls_elided=elided, curl_hint=curl_hint(files[0] if files else None), page=pg)
    return Answer(record=record, resolved=resolved, notes=notes, from_upstream=True)
