"""The data selection eco_list_files and eco_download_files share: the filters on parsed file
names (`FileSelectors`, a part of both tools' inputs) and `select`, which resolves a selection's
names into a listing query and checks the site-months cap before any request."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from catalog import months
from catalog.checks import bad
from catalog.index import CatalogIndex
from catalog.resolve import resolve_product, resolve_release, resolve_site
from downloads.files import FileRecord, ListingQuery, Package
from downloads.kinds import FileKind
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import ToolInput


class FileSelectors(ToolInput):
    """The selectors eco_list_files and eco_download_files share, applied to the parsed names."""

    kind: FileKind | None = None
    table: str | None = Field(None, max_length=200)
    hor: str | None = Field(None, max_length=3)
    ver: str | None = Field(None, max_length=3)
    tmi: str | None = Field(None, max_length=3)
    name_contains: str | None = Field(None, max_length=200)

    def keep(self, f: FileRecord) -> bool:
        if self.kind is not None and f.kind != self.kind:
            return False
        if self.table is not None and (f.table or "").lower() != self.table.lower():
            return False
        for want, got in ((self.hor, f.hor), (self.ver, f.ver), (self.tmi, f.tmi)):
            if want is not None and (got is None or got.lstrip("0") != want.lstrip("0")):
                return False
        return self.name_contains is None or self.name_contains.lower() in f.name.lower()


class DataSelection(Protocol):
    """What `select` reads of an input: eco_list_files' and eco_download_files' data selection
    (the download's are optional there: its input requires them with a product)."""

    @property
    def product(self) -> str | None: ...
    @property
    def site_codes(self) -> list[str] | None: ...
    @property
    def start_month(self) -> str | None: ...
    @property
    def end_month(self) -> str | None: ...
    @property
    def package(self) -> Package: ...
    @property
    def release(self) -> str | None: ...
    @property
    def include_provisional(self) -> bool: ...


def select(idx: CatalogIndex, cfg: EcoConfig, args: DataSelection) -> tuple[ListingQuery, dict[str, Any]]:
    """The listing query of a data selection, names resolved and the site-months cap checked;
    nothing is sent. Returns the query and `resolved`."""
    # Required by eco_list_files' schema, and by DownloadInput.selection() with a product.
    assert args.product is not None and args.site_codes and args.start_month is not None
    start = args.start_month
    end = args.end_month or start
    if months.month_index(end) < months.month_index(start):
        raise bad("end_month", f"{end} is before start_month {start}")
    prod = resolve_product(args.product, index=idx)
    sites = [resolve_site(s, index=idx, field="site_codes") for s in args.site_codes]
    codes = tuple(dict.fromkeys(s.code for s in sites))
    span = months.month_index(end) - months.month_index(start) + 1
    cap = cfg.limits.max_site_months_per_query
    if span * len(codes) > cap:
        raise EcoError("query_too_large",
                       f"site_codes x months: {len(codes)} sites x {span} months = {span * len(codes)} site-months, "
                       f"at most {cap}; narrow the sites or the months",
                       details={"siteMonths": span * len(codes), "maxSiteMonths": cap})
    resolved: dict[str, Any] = {"product": prod.echo()}
    resolved["siteCodes"] = [s.echo() for s in sites]  # every resolution, a code's too
    tag = None
    if args.release is not None:
        tag = resolve_release(args.release, index=idx).tag
        resolved["release"] = {"input": args.release, "release": tag}
    query = ListingQuery(prod.code, codes, start, end, args.package, tag, args.include_provisional)
    return query, resolved
