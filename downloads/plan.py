"""The plan of one eco_download_files call, made and checked before the first byte moves.

    await make_plan(idx=, client=, cfg=, request) -> Plan

Sources: data files (the eco_list_files selectors: one listing request), package ZIPs per
site-month (the same listing sizes them), a prototype dataset's files, one document. Then the
checks, in this order, each refusing the whole call with nothing written: file count and byte
caps (`download_limit_exceeded`, with the plan's totals), every URL's host on the allow-list and
every destination inside the download directory with nothing in its way (`download_denied`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from catalog.index import CatalogIndex
from catalog.resolve import PROVISIONAL
from downloads import paths
from downloads.files import Filters, Package, list_site_months, package_url, select
from eco_core.config import EcoConfig
from eco_core.errors import EcoError

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

Source = Literal["data", "zip", "prototype", "document"]


@dataclass(frozen=True)
class Request:
    product: str | None = None
    site_codes: list[str] | None = None
    start_month: str | None = None
    end_month: str | None = None
    package: Package = "basic"
    release: str | None = None
    include_provisional: bool = True
    filters: Filters = field(default_factory=Filters)
    as_zip: bool = False
    prototype_uuid: str | None = None
    file_names: list[str] | None = None
    spec_number: str | None = None
    dest_subdir: str | None = None
    if_exists: Literal["skip", "error"] = "skip"
    max_bytes: int | None = None


@dataclass(frozen=True)
class Item:
    url: str
    rel: PurePosixPath  # destination, relative to the download directory
    name: str
    source: Source
    size: int | None  # exact when known; for ZIPs an estimate (the sum of their files)
    md5: str | None
    token_only: bool
    product: str | None = None
    site: str | None = None
    month: str | None = None
    release: str | None = None
    doi: str | None = None
    citation: str | None = None

    @property
    def exact_size(self) -> int | None:
        return None if self.source == "zip" else self.size


@dataclass
class Plan:
    root: Path
    items: list[Item]
    resolved: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # check()'s confiner: the transfers reuse its resolved and listed directories.
    confiner: paths.Confiner | None = field(default=None, repr=False, compare=False)

    @property
    def bytes(self) -> int:
        return sum(i.size or 0 for i in self.items)


def _citation(idx: CatalogIndex, product: str, release: str) -> tuple[str | None, str]:
    entry = idx.by_code.get(product)
    name = entry.name if entry else product
    if release == PROVISIONAL:
        return None, (f"NEON (National Ecological Observatory Network). {name} ({product}), provisional data. "
                      "https://data.neonscience.org (provisional data may change; cite the access date).")
    rel = next((r for r in idx.releases if r.tag == release), None)
    doi = rel.product_dois.get(product) if rel else None
    link = f"https://doi.org/{doi.removeprefix('https://doi.org/')}" if doi else "https://data.neonscience.org"
    return doi, f"NEON (National Ecological Observatory Network). {name} ({product}), {release}. {link}"


def _source_of(req: Request) -> Source:
    given = [k for k, v in (("product", req.product), ("prototype_uuid", req.prototype_uuid),
                            ("spec_number", req.spec_number)) if v]
    if len(given) != 1:
        raise EcoError("invalid_argument", "product, prototype_uuid, spec_number: give exactly one source"
                       + (f" (got {', '.join(given)})" if given else ""), details={"field": "product"})
    if req.file_names is not None and not req.prototype_uuid:
        raise EcoError("invalid_argument", "file_names: only with prototype_uuid", details={"field": "file_names"})
    if req.product:
        if not req.site_codes or not req.start_month:
            field_name = "site_codes" if not req.site_codes else "start_month"
            raise EcoError("invalid_argument", f"{field_name}: required with product", details={"field": field_name})
        return "zip" if req.as_zip else "data"
    for name, values in (("prototype_uuid", [req.prototype_uuid]), ("file_names", req.file_names or []),
                         ("spec_number", [req.spec_number])):
        for value in values:
            if value is not None and any(seg in (".", "..") for seg in value.replace("\\", "/").split("/")):
                # These name the request's URL path and the file's place on disk: a dot segment
                # would move both.
                raise EcoError("invalid_argument", f"{name}: {value!r} has a '.' or '..' path segment",
                               details={"field": name})
    return "prototype" if req.prototype_uuid else "document"


async def make_plan(*, idx: CatalogIndex, client: UpstreamClient, cfg: EcoConfig, req: Request) -> Plan:
    source = _source_of(req)
    # The sites cap (the schema's maxItems, from limits.max_sites_per_call) holds whatever the
    # source: a prototype or document call must not take, and silently ignore, more site codes
    # than a data call may. Refused as downloads.files.select refuses a data call's.
    cap = cfg.limits.max_sites_per_call
    if req.site_codes is not None and len(req.site_codes) > cap:
        raise EcoError("query_too_large", f"site_codes: {len(req.site_codes)} sites, at most {cap} per call",
                       details={"field": "site_codes", "sites": len(req.site_codes), "maxSites": cap})
    root = cfg.download_dir
    name_max, path_max = paths.limits(root)
    base = paths.subdir(req.dest_subdir, name_max=name_max)
    # The named sub-directory is checked before any request: a refusal costs nothing upstream.
    confine = paths.Confiner(root)
    confine.directory(base, "dest_subdir")
    resolved: dict[str, Any] = {}
    items: list[Item] = []
    if source in ("data", "zip"):
        assert req.product and req.site_codes and req.start_month
        sel, resolved = select(idx, cfg, product=req.product, site_codes=req.site_codes,
                               start_month=req.start_month, end_month=req.end_month, package=req.package,
                               release=req.release, include_provisional=req.include_provisional,
                               filters=req.filters)
        listing = await list_site_months(client, cfg, sel)
        cites: dict[str, tuple[str | None, str]] = {}  # by release: a plan's files share one or two
        if source == "data":
            for f in listing.files:
                if f.release not in cites:
                    cites[f.release] = _citation(idx, sel.product, f.release)
                doi, cite = cites[f.release]
                items.append(Item(
                    url=f.url or "", rel=base.joinpath(sel.product, f.site_code, f.month, paths.plain_name(f.name)),
                    name=f.name, source="data", size=f.size, md5=f.md5, token_only=False, product=sel.product,
                    site=f.site_code, month=f.month, release=f.release, doi=doi, citation=cite))
        else:
            sizes: dict[tuple[str, str], int] = {}
            for f in listing.files:
                sizes[(f.site_code, f.month)] = sizes.get((f.site_code, f.month), 0) + f.size
            for (site, month), rel in sorted(listing.site_months.items()):
                name = f"{sel.product}.{site}.{month}.{sel.package}.zip"
                doi, cite = _citation(idx, sel.product, rel)
                items.append(Item(
                    url=package_url(cfg, sel.product, site, month, sel.package, sel.release),
                    rel=base / sel.product / site / month / name, name=name, source="zip",
                    size=sizes.get((site, month), 0), md5=None, token_only=True, product=sel.product, site=site,
                    month=month, release=rel, doi=doi, citation=cite))
    elif source == "prototype":
        assert req.prototype_uuid
        data = await client.prototype_data(req.prototype_uuid)
        files = data.files
        if req.file_names is not None:
            known = {f.file_name for f in files}
            unknown = [n for n in req.file_names if n not in known]
            if unknown:
                raise EcoError("not_found", f"file_names: {', '.join(unknown)} not in prototype dataset "
                               f"{req.prototype_uuid}", details={"field": "file_names", "didYouMean": sorted(known)[:10]})
            files = [f for f in files if f.file_name in set(req.file_names)]
        resolved = {"prototypeUuid": data.dataset_uuid}
        for pf in files:
            if not pf.url:
                raise EcoError("upstream_error", f"/prototype/data/{{uuid}}: {pf.file_name} has no URL",
                               details={"endpoint": "/prototype/data/{uuid}"})
            folder = paths.plain_name(data.dataset_uuid, "prototype_uuid")
            items.append(Item(url=pf.url, rel=base / "prototypes" / folder / paths.plain_name(pf.file_name),
                              name=pf.file_name, source="prototype", size=pf.size, md5=pf.md5, token_only=False))
    else:
        assert req.spec_number
        head = await client.document_head(req.spec_number)
        name = paths.plain_name(f"{req.spec_number}.pdf", "spec_number")
        items.append(Item(url=head.url, rel=base / "documents" / name, name=name, source="document",
                          size=head.size, md5=None, token_only=False))
    plan = Plan(root=root, items=items, resolved=resolved, confiner=confine)
    check(plan, cfg, req, name_max=name_max, path_max=path_max)
    return plan


def check(plan: Plan, cfg: EcoConfig, req: Request, *, name_max: int = paths.NAME_MAX,
          path_max: int = paths.PATH_MAX) -> None:
    """Caps, hosts, destinations and if_exists, in that order; nothing has been written yet."""
    d = cfg.downloads
    largest = max((i.size or 0 for i in plan.items), default=0)
    totals = {"files": len(plan.items), "bytes": plan.bytes, "largestFileBytes": largest,
              "maxFiles": d.max_files_per_call, "maxBytes": min(d.max_bytes_per_call, req.max_bytes or 1 << 62),
              "maxFileBytes": d.max_file_bytes}
    over = []
    if len(plan.items) > d.max_files_per_call:
        over.append(f"{len(plan.items)} files, at most {d.max_files_per_call} per call")
    if plan.bytes > d.max_bytes_per_call:
        over.append(f"{plan.bytes} bytes, at most {d.max_bytes_per_call} per call")
    if req.max_bytes is not None and plan.bytes > req.max_bytes:
        over.append(f"max_bytes: {plan.bytes} bytes planned, above the {req.max_bytes} asked for")
    if largest > d.max_file_bytes:
        over.append(f"a file of {largest} bytes, at most {d.max_file_bytes} per file")
    if over:
        raise EcoError("download_limit_exceeded", "download plan too large: " + "; ".join(over)
                       + " (narrow the selectors or call again for the rest)", details=totals)
    allowed = paths.host_matcher(d.allowed_hosts)
    confine = plan.confiner = plan.confiner or paths.Confiner(plan.root)
    for item in plan.items:
        paths.check_url(item.url, allowed)
        # The .part beside the file must fit the file system too (upstream names are long).
        part_name = len(paths.name_bytes(item.rel.name, str(item.rel))) + len(".part")
        if part_name > name_max:
            raise paths.denied(f"{item.rel}: the file name is {part_name - 5} bytes, too long for this file system "
                               f"with its .part suffix (at most {name_max})", "Download it with eco_list_files' "
                               "URL under a shorter name.", path=str(item.rel), nameMax=name_max)
        target = confine(item.rel, None)
        if len(os.fsencode(str(target))) + len(".part") >= path_max:
            raise paths.denied(f"{item.rel}: the path is too long for this file system (at most {path_max} bytes)",
                               "Choose a shorter dest_subdir (or a download directory nearer the root).",
                               path=str(item.rel), pathMax=path_max)
        confine.file_place(item.rel, target)
        if req.if_exists == "error" and confine.entry(target) is not None:
            raise paths.denied(f"if_exists: {item.rel} already exists", field="if_exists", path=str(item.rel))
