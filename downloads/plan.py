"""The plan of one eco_download_files call: the files it fetches and where each lands, checked
before the first byte moves.

    plan = start(cfg, dest_subdir)                       # the sub-directory checked, no request yet
    plan.items = [...]                                   # the files the caller selected
    check(plan, cfg, if_exists=..., max_bytes=...)

`check` refuses the whole call with nothing written, in this order: file count and byte caps
(`download_limit_exceeded`, with the plan's totals), every URL's host on the allow-list and
every destination inside the download directory with nothing in its way (`download_denied`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from downloads import paths
from eco_core.config import EcoConfig
from eco_core.errors import EcoError

# What the caller selected to download: data files, package ZIPs, a prototype dataset's files,
# or one document.
Selection = Literal["data", "zip", "prototype", "document"]
IfExists = Literal["skip", "error"]


@dataclass(frozen=True)
class Item:
    url: str
    rel: PurePosixPath  # destination, relative to the download directory
    name: str
    source: Selection
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
    base: PurePosixPath  # the caller's sub-directory, relative to root
    name_max: int
    path_max: int
    # The sub-directory's confiner: the checks and the transfers reuse its resolved and listed directories.
    confiner: paths.Confiner = field(repr=False, compare=False)
    items: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(i.size or 0 for i in self.items)


def start(cfg: EcoConfig, dest_subdir: str | None) -> Plan:
    """An empty plan under the download directory; the named sub-directory is checked before any
    request, so a refusal costs nothing upstream."""
    root = cfg.download_dir
    name_max, path_max = paths.limits(root)
    base = paths.subdir(dest_subdir, name_max=name_max)
    confine = paths.Confiner(root)
    confine.directory(base, "dest_subdir")
    return Plan(root=root, base=base, name_max=name_max, path_max=path_max, confiner=confine)


def check(plan: Plan, cfg: EcoConfig, *, if_exists: IfExists, max_bytes: int | None,
          max_files: int | None = None) -> None:
    """Caps, hosts, destinations and if_exists, in that order; nothing has been written yet.
    `max_files`: the calling tool's own file cap (eco_stack_tables reads hundreds of small files),
    instead of downloads.max_files_per_call."""
    d = cfg.downloads
    files_cap = max_files if max_files is not None else d.max_files_per_call
    largest = max((i.size or 0 for i in plan.items), default=0)
    totals = {"files": len(plan.items), "bytes": plan.bytes, "largestFileBytes": largest,
              "maxFiles": files_cap, "maxBytes": min(d.max_bytes_per_call, max_bytes or 1 << 62),
              "maxFileBytes": d.max_file_bytes}
    over = []
    if len(plan.items) > files_cap:
        over.append(f"{len(plan.items)} files, at most {files_cap} per call")
    if plan.bytes > d.max_bytes_per_call:
        over.append(f"{plan.bytes} bytes, at most {d.max_bytes_per_call} per call")
    if max_bytes is not None and plan.bytes > max_bytes:
        over.append(f"max_bytes: {plan.bytes} bytes planned, above the {max_bytes} asked for")
    if largest > d.max_file_bytes:
        over.append(f"a file of {largest} bytes, at most {d.max_file_bytes} per file")
    if over:
        raise EcoError("download_limit_exceeded", "download plan too large: " + "; ".join(over)
                       + " (narrow the selectors or call again for the rest)", details=totals)
    allowed = paths.host_matcher(d.allowed_hosts)
    confine = plan.confiner
    name_max, path_max = plan.name_max, plan.path_max
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
        if if_exists == "error" and confine.entry(target) is not None:
            raise paths.denied(f"if_exists: {item.rel} already exists", field="if_exists", path=str(item.rel))
