"""The listing both file tools read: eco_list_files pages it, eco_download_files plans from it.

    await list_site_months(client, cfg, query)  -> Listing (every file of the query, all pages)

One site and one month is one `GET /data/{product}/{site}/{month}` (it also carries the package
ZIP links); anything wider is one `POST /data/query`. Each file's kind, table and sensor
position are read from its name (`kinds.classify`), so the callers filter locally and a
narrower filter never costs another request. The rows are eco_list_files' file rows as they go
on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal
from urllib.parse import quote, urlsplit

from catalog import months
from catalog.resolve import PROVISIONAL
from downloads.kinds import FileKind, classify
from eco_core.config import EcoConfig
from eco_core.wire import WireModel
from upstream import models as um

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

Package = Literal["basic", "expanded"]


class FileRecord(WireModel):
    name: str
    kind: FileKind
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


@dataclass(frozen=True)
class ListingQuery:
    """What to list: the product and sites resolved to codes, the window checked."""

    product: str
    sites: tuple[str, ...]
    start: str
    end: str
    package: Package = "basic"
    release: str | None = None
    include_provisional: bool = True

    @property
    def month_list(self) -> list[str]:
        a, b = months.month_index(self.start), months.month_index(self.end)
        return [months.month_from_index(k) for k in range(a, b + 1)]


@dataclass
class Listing:
    files: list[FileRecord] = field(default_factory=list)  # by site, month and name
    packages: list[PackageLink] = field(default_factory=list)
    external_data: list[ExternalData] = field(default_factory=list)
    # (site, month) -> release, for every site-month the upstream answered with data.
    site_months: dict[tuple[str, str], str] = field(default_factory=dict)
    # Site-months the upstream answered with provisional data only, left out on request.
    provisional_only: set[tuple[str, str]] = field(default_factory=set)


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


async def list_site_months(client: UpstreamClient, cfg: EcoConfig, query: ListingQuery) -> Listing:
    """Every file of the query (one upstream request)."""
    out = Listing()
    if len(query.sites) == 1 and query.start == query.end:
        site, month = query.sites[0], query.start
        got = await client.data_listing(query.product, site, month, package=query.package, release=query.release)
        rel = got.release or query.release or PROVISIONAL
        if got.files and rel == PROVISIONAL and not query.include_provisional:
            out.provisional_only.add((site, month))
        if not got.files or (rel == PROVISIONAL and not query.include_provisional):
            return out
        out.site_months[(site, month)] = rel
        out.files = [_record(f, site, month, rel) for f in got.files if _package_of(f) in (query.package, None)]
        out.packages = [PackageLink(site_code=site, month=month, type=p.type, url=p.url) for p in got.packages
                        if p.type == query.package]
        out.external_data = [ExternalData(site_code=site, month=month, name=e.name, type=e.type, url=e.url)
                             for e in got.external_data]
    else:
        body = um.DataQueryRequest(product_code=query.product, site_codes=list(query.sites),
                                   start_date_month=query.start, end_date_month=query.end, release=query.release,
                                   package=query.package, include_provisional=query.include_provisional)
        result = await client.data_query(body)
        for block in result.releases:
            if block.release == PROVISIONAL and not query.include_provisional:
                out.provisional_only.update((pkg.site_code, pkg.month) for pkg in block.packages)
                continue
            for pkg in block.packages:
                out.site_months[(pkg.site_code, pkg.month)] = block.release
                out.files += [_record(f, pkg.site_code, pkg.month, block.release) for f in pkg.files]
                # The query answer has no ZIP links; NEON's package route is the same for every site-month.
                out.packages.append(PackageLink(
                    site_code=pkg.site_code, month=pkg.month, type=query.package,
                    url=package_url(cfg, query.product, pkg.site_code, pkg.month, query.package, query.release)))
    out.files.sort(key=lambda f: (f.site_code, f.month, f.name))
    out.packages.sort(key=lambda p: (p.site_code, p.month))
    return out
