"""eco_list_files: the data files of a product for some sites and months, with kinds, sizes,
MD5s and signed URLs (token required)."""

from __future__ import annotations

from pydantic import Field

from catalog.access import catalog_index
from catalog.months import MONTH_PATTERN
from downloads.files import Detail, FilesRecord, Filters, Package, list_files
from downloads.kinds import Kind
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec


class FileSelectors(ToolInput):
    """The selectors eco_list_files and eco_download_files share."""

    kind: Kind | None = None
    table: str | None = Field(None, max_length=200)
    hor: str | None = Field(None, max_length=3)
    ver: str | None = Field(None, max_length=3)
    tmi: str | None = Field(None, max_length=3)
    name_contains: str | None = Field(None, max_length=200)

    def filters(self, filename: str | None = None) -> Filters:
        return Filters(kind=self.kind, table=self.table, hor=self.hor, ver=self.ver, tmi=self.tmi,
                       name_contains=self.name_contains, filename=filename)


class ListFilesInput(FileSelectors):
    product: str = Field(max_length=300)
    site_codes: list[str] = Field(min_length=1, json_schema_extra={"maxItems": 30},
                                  description="1-30 site codes or names.")
    start_month: str = Field(pattern=MONTH_PATTERN)
    end_month: str | None = Field(None, pattern=MONTH_PATTERN)
    package: Package = "basic"
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY; default latest per month.")
    include_provisional: bool = True
    detail: Detail = "files"
    include_urls: bool = True
    filename: str | None = Field(None, max_length=300, description="One exact name (one site-month).")
    limit: DefaultLimit = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


class ListFilesOutput(FilesRecord, Envelope):
    pass


def _steps(args: ListFilesInput, rec: FilesRecord, *, stdio: bool) -> list[NextStep]:
    steps: list[NextStep] = []
    if rec.summary.files:
        # HTTP neither lists nor runs the download tool: there the signed URLs are the download.
        if stdio:
            sel = args.model_dump(exclude_defaults=True, exclude={"detail", "include_urls", "limit", "offset", "filename"})
            if args.filename:
                sel["name_contains"] = args.filename  # the download tool selects one file by its name
            steps.append(NextStep(tool="eco_download_files", arguments=sel,
                                  why=f"Download these {rec.summary.files} files, MD5-verified."))
        steps.append(NextStep(tool="eco_get_citation", arguments={"product": rec.product_code},
                              why="How to cite the data."))
    if rec.page is not None and rec.page.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_list_files", arguments={**more, "offset": rec.page.next_offset},
                              why="The next page."))
    return steps


async def list_files_tool(args: ListFilesInput, call: CallContext) -> ListFilesOutput:
    idx = await catalog_index(call.cfg, call.client)
    a = await list_files(
        idx=idx, client=ports.upstream_client(), cfg=call.cfg, product=args.product, site_codes=args.site_codes,
        start_month=args.start_month, end_month=args.end_month, package=args.package, release=args.release,
        include_provisional=args.include_provisional, filters=args.filters(args.filename), detail=args.detail,
        include_urls=args.include_urls, limit=args.limit, offset=args.offset)
    source = Source(origin="upstream", api_base_url=call.cfg.eco.base_url)
    return ListFilesOutput(**dict(a.record), resolved=a.resolved, notes=a.notes,
                           next_steps=_steps(args, a.record, stdio=call.transport == "stdio"), source=source)


TOOLS = [
    ToolSpec(
        name="eco_list_files",
        title="List data files",
        description=(
            "Data files of a product for 1-30 sites and a month range (<=500 site-months): kind, table, "
            "HOR/VER/TMI, size, MD5, signed URL (no token needed; urlExpiresAt). filename: one file's URL; "
            "detail summary/site_months to size a download. Needs a token."
        ),
        surface="data",
        input_model=ListFilesInput,
        output_model=ListFilesOutput,
        read=list_files_tool,
        requires_token=True,
        endpoints=("GET /data/{productCode}/{siteCode}/{yearMonth}",
                   "GET /data/{productCode}/{siteCode}/{yearMonth}/{filename}", "POST /data/query"),
        page_lists={"files": "page", "siteMonths": "page"},
    ),
]
