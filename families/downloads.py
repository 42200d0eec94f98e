"""The downloads family: eco_download_files (stdio only). Data files (the eco_list_files
selectors), package ZIPs, a prototype dataset's files or one document onto the local disk,
MD5-verified, resumable, with a manifest.

The read selects the files and plans where each lands (downloads/plan.py: caps, hosts and
destinations checked before the first byte moves); the transfers and the manifest are
downloads/transfer.py. Data files and ZIPs need a token; prototype files and documents do not.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import Field

from catalog.access import catalog_index
from catalog.citation_text import cite_steps
from catalog.index import CatalogIndex
from catalog.months import MONTH_PATTERN
from catalog.releases import bare_doi, doi_link
from catalog.resolve import PROVISIONAL
from downloads import paths
from downloads.files import FileRecord, ListingQuery, Package, list_site_months, package_url
from downloads.plan import IfExists, Item, Selection, check, start
from downloads.selection import FileSelectors, select
from downloads.transfer import DownloadedFileOut, DownloadTotals, download
from eco_core.bounds import Configured
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from eco_core.wire import Envelope, Source
from families.call import CallContext
from upstream import models as um


class DownloadInput(FileSelectors):
    product: str | None = Field(None, max_length=300)
    site_codes: Annotated[list[str] | None, Configured("limits.max_sites_per_call", "maxItems")] = Field(
        None, min_length=1)
    start_month: str | None = Field(None, pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    package: Package = "basic"
    release: str | None = Field(None, max_length=64)
    include_provisional: bool = True
    as_zip: bool = False
    prototype_uuid: str | None = Field(None, max_length=64)
    file_names: list[str] | None = Field(None, min_length=1, max_length=500, description="Only with prototype_uuid.")
    spec_number: str | None = Field(None, max_length=100)
    dest_subdir: str | None = Field(None, max_length=300, description="Relative to the download dir.")
    if_exists: IfExists = "skip"
    max_bytes: int | None = Field(None, ge=1)

    def needs_token(self) -> bool:
        """Only data files and ZIPs are token-only (the gateway asks before the read runs)."""
        return self.product is not None

    def selection(self) -> Selection:
        """What the caller selected: exactly one of product, prototype_uuid, spec_number, with
        the arguments that one needs; invalid_argument naming the field otherwise."""
        given = [k for k, v in (("product", self.product), ("prototype_uuid", self.prototype_uuid),
                                ("spec_number", self.spec_number)) if v]
        if len(given) != 1:
            raise EcoError("invalid_argument", "product, prototype_uuid, spec_number: give exactly one source"
                           + (f" (got {', '.join(given)})" if given else ""), details={"field": "product"})
        if self.file_names is not None and not self.prototype_uuid:
            raise EcoError("invalid_argument", "file_names: only with prototype_uuid", details={"field": "file_names"})
        if self.product:
            if not self.site_codes or not self.start_month:
                name = "site_codes" if not self.site_codes else "start_month"
                raise EcoError("invalid_argument", f"{name}: required with product", details={"field": name})
            return "zip" if self.as_zip else "data"
        for name, values in (("prototype_uuid", [self.prototype_uuid]), ("file_names", self.file_names or []),
                             ("spec_number", [self.spec_number])):
            for value in values:
                if value is not None and any(seg in (".", "..") for seg in value.replace("\\", "/").split("/")):
                    # These name the request's URL path and the file's place on disk: a dot segment
                    # would move both.
                    raise EcoError("invalid_argument", f"{name}: {value!r} has a '.' or '..' path segment",
                                   details={"field": name})
        return "prototype" if self.prototype_uuid else "document"


class DownloadOutput(Envelope):
    download_dir: str
    requested: int
    files: list[DownloadedFileOut]
    totals: DownloadTotals


async def download_files(args: DownloadInput, call: CallContext) -> DownloadOutput:
    cfg, client = call.cfg, call.client
    idx = await catalog_index(cfg, client)
    if not cfg.downloads_enabled:
        raise EcoError("feature_unavailable", "downloads are disabled on this server (downloads.enabled)",
                       details={"setting": "downloads.enabled"})
    selected = args.selection()
    plan = start(cfg, args.dest_subdir)
    resolved: dict[str, Any] = {}
    if selected in ("data", "zip"):
        query, resolved = select(idx, cfg, args)
        listing = await list_site_months(client, cfg, query)
        files = [f for f in listing.files if args.keep(f)]
        if selected == "data":
            plan.items = _data_items(idx, query, files, plan.base)
        else:
            plan.items = _zip_items(idx, cfg, query, listing.site_months, files, plan.base)
    elif selected == "prototype":
        assert args.prototype_uuid
        data = await client.prototype_data(args.prototype_uuid)
        resolved = {"prototypeUuid": data.dataset_uuid}
        plan.items = _prototype_items(args.prototype_uuid, data, args.file_names, plan.base)
    else:
        assert args.spec_number
        head = await client.document_head(args.spec_number)
        name = paths.plain_name(f"{args.spec_number}.pdf", "spec_number")
        plan.items = [Item(url=head.url, rel=plan.base / "documents" / name, name=name, source="document",
                           size=head.size, md5=None, token_only=False)]
    check(plan, cfg, if_exists=args.if_exists, max_bytes=args.max_bytes)
    done, totals = await download(client, cfg, plan)
    notes = list(plan.notes)
    if totals.changed_upstream:
        notes.append(f"{totals.changed_upstream} files changed upstream since the manifest and were fetched "
                     "again (changedUpstream).")
    steps = []
    if args.product:
        steps += cite_steps(args.product, {i.release for i in plan.items if i.release},
                            why="Cite the data (the manifest, eco-manifest.json, holds per-file citations)")
    return DownloadOutput(download_dir=str(plan.root), requested=len(plan.items), files=done, totals=totals,
                          resolved=resolved, notes=notes, next_steps=steps,
                          source=Source(origin="upstream", api_base_url=cfg.eco.base_url))


def _citation(idx: CatalogIndex, product: str, release: str) -> tuple[str | None, str]:
    """The DOI and citation text the manifest records for a product's files of one release."""
    entry = idx.by_code.get(product)
    name = entry.name if entry else product
    if release == PROVISIONAL:
        return None, (f"NEON (National Ecological Observatory Network). {name} ({product}), provisional data. "
                      "https://data.neonscience.org (provisional data may change; cite the access date).")
    rel = next((r for r in idx.releases if r.tag == release), None)
    doi = bare_doi(rel.product_dois.get(product)) if rel else None
    link = doi_link(doi) or "https://data.neonscience.org"
    return doi, f"NEON (National Ecological Observatory Network). {name} ({product}), {release}. {link}"


def _data_items(idx: CatalogIndex, query: ListingQuery, files: list[FileRecord], base: PurePosixPath) -> list[Item]:
    """Each data file under product/site/month, by its signed URL (no token)."""
    cites: dict[str, tuple[str | None, str]] = {}  # by release: a plan's files share one or two
    items = []
    for f in files:
        if f.release not in cites:
            cites[f.release] = _citation(idx, query.product, f.release)
        doi, cite = cites[f.release]
        items.append(Item(
            url=f.url or "", rel=base.joinpath(query.product, f.site_code, f.month, paths.plain_name(f.name)),
            name=f.name, source="data", size=f.size, md5=f.md5, token_only=False, product=query.product,
            site=f.site_code, month=f.month, release=f.release, doi=doi, citation=cite))
    return items


def _zip_items(idx: CatalogIndex, cfg: EcoConfig, query: ListingQuery, site_months: dict[tuple[str, str], str],
               files: list[FileRecord], base: PurePosixPath) -> list[Item]:
    """One package ZIP per site-month with data, from NEON's package route (token-only); its
    size is estimated as the sum of the selected files it holds."""
    sizes: dict[tuple[str, str], int] = {}
    for f in files:
        sizes[(f.site_code, f.month)] = sizes.get((f.site_code, f.month), 0) + f.size
    items = []
    for (site, month), rel in sorted(site_months.items()):
        name = f"{query.product}.{site}.{month}.{query.package}.zip"
        doi, cite = _citation(idx, query.product, rel)
        items.append(Item(
            url=package_url(cfg, query.product, site, month, query.package, query.release),
            rel=base / query.product / site / month / name, name=name, source="zip",
            size=sizes.get((site, month), 0), md5=None, token_only=True, product=query.product, site=site,
            month=month, release=rel, doi=doi, citation=cite))
    return items


def _prototype_items(uuid: str, data: um.PrototypeData, file_names: list[str] | None,
                     base: PurePosixPath) -> list[Item]:
    """The dataset's files (or the named ones) under prototypes/<uuid>/."""
    files = data.files
    if file_names is not None:
        known = {f.file_name for f in files}
        unknown = [n for n in file_names if n not in known]
        if unknown:
            raise EcoError("not_found", f"file_names: {', '.join(unknown)} not in prototype dataset "
                           f"{uuid}", details={"field": "file_names", "didYouMean": sorted(known)[:10]})
        wanted = set(file_names)
        files = [f for f in files if f.file_name in wanted]
    items = []
    for pf in files:
        if not pf.url:
            raise EcoError("upstream_error", f"/prototype/data/{{uuid}}: {pf.file_name} has no URL",
                           details={"endpoint": "/prototype/data/{uuid}"})
        folder = paths.plain_name(data.dataset_uuid, "prototype_uuid")
        items.append(Item(url=pf.url, rel=base / "prototypes" / folder / paths.plain_name(pf.file_name),
                          name=pf.file_name, source="prototype", size=pf.size, md5=pf.md5, token_only=False))
    return items
