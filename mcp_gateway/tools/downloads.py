"""eco_download_files (stdio only): data files, package ZIPs, a prototype dataset's files or one
document onto the local disk, MD5-verified, resumable, with a manifest."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.access import catalog_index
from catalog.months import MONTH_PATTERN
from downloads.files import Package
from downloads.plan import Request
from downloads.transfer import DownloadRecord, download
from eco_core.wire import Envelope, NextStep, Source
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec
from mcp_gateway.tools.files import FileSelectors


class DownloadInput(FileSelectors):
    product: str | None = Field(None, max_length=300)
    site_codes: list[str] | None = Field(None, min_length=1, json_schema_extra={"maxItems": 30})
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
    if_exists: Literal["skip", "error"] = "skip"
    max_bytes: int | None = Field(None, ge=1)

    def needs_token(self) -> bool:
        return self.product is not None

    def request(self) -> Request:
        return Request(product=self.product, site_codes=self.site_codes, start_month=self.start_month,
                       end_month=self.end_month, package=self.package, release=self.release,
                       include_provisional=self.include_provisional, filters=self.filters(), as_zip=self.as_zip,
                       prototype_uuid=self.prototype_uuid, file_names=self.file_names, spec_number=self.spec_number,
                       dest_subdir=self.dest_subdir, if_exists=self.if_exists, max_bytes=self.max_bytes)


class DownloadOutput(DownloadRecord, Envelope):
    pass


async def download_files_tool(args: DownloadInput, call: CallContext) -> DownloadOutput:
    idx = await catalog_index(call.cfg, call.client)
    record, plan = await download(idx=idx, client=ports.upstream_client(), cfg=call.cfg, req=args.request())
    notes = list(plan.notes)
    if record.totals.changed_upstream:
        notes.append(f"{record.totals.changed_upstream} files changed upstream since the manifest and were fetched "
                     "again (changedUpstream).")
    steps = []
    if args.product:
        steps.append(NextStep(tool="eco_get_citation", arguments={"product": args.product},
                              why="Cite the data; the manifest (eco-manifest.json) holds per-file citations."))
    return DownloadOutput(**dict(record), resolved=plan.resolved, notes=notes, next_steps=steps,
                          source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


TOOLS = [
    ToolSpec(
        name="eco_download_files",
        title="Download files",
        description=(
            "Download to the server's download directory (stdio only): data files by the eco_list_files "
            "selectors, package ZIPs (as_zip), a prototype dataset's files (prototype_uuid, file_names) or one "
            "document (spec_number). Caps: 50 files, 2 GiB a call, 1 GiB a file, max_bytes. Files are "
            "MD5-verified, land under product/site/month, resume from .part, skip identical files, and are "
            "recorded in eco-manifest.json (changedUpstream). Token needed for data files."
        ),
        surface="data",
        input_model=DownloadInput,
        output_model=DownloadOutput,
        read=download_files_tool,
        requires_token=True,
        endpoints=("GET /data/package/{productCode}/{siteCode}/{yearMonth}", "GET /prototype/data/{uuid}",
                   "GET /documents/{specNumber}", "POST /data/query"),
        stdio_only=True,
        read_only=False,
        page_lists={},
    ),
]
