"""eco_search_prototype_datasets and eco_get_prototype_dataset: NEON's experimental datasets (own
DOIs), searched locally in the cached upstream list, and one dataset with its files."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.prototypes import PrototypeDatasetSummary, PrototypeRecord, prototype_detail, search_prototypes
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec, default_registry

UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
DOWNLOAD_TOOL = "eco_download_files"


class SearchPrototypesInput(ToolInput):
    query: str | None = Field(None, max_length=500, description="Words that must all appear in title, abstract or keywords.")
    theme: str | None = Field(None, max_length=100, description="Theme prefix, case-insensitive.")
    science_team: str | None = Field(None, max_length=100, description="Team name substring or abbreviation (AOS).")
    site_code: str | None = Field(None, pattern=r"^[A-Za-z]{4}$")
    start_year: int | None = Field(None, ge=1900, le=2100, description="Data in this year or later.")
    end_year: int | None = Field(None, ge=1900, le=2100, description="Data in this year or earlier.")
    file_type: str | None = Field(None, max_length=50, description="CSV, ZIP, ... case-insensitive.")
    is_published: bool | None = None
    limit: int = Field(25, ge=1, le=200)
    offset: int = Field(0, ge=0)


class SearchPrototypesOutput(Envelope):
    items: list[PrototypeDatasetSummary]
    page: Page
    facets: dict[str, dict[str, int]] = Field(description="themes, scienceTeams, fileTypes (upstream strings).")


async def search_prototypes_tool(args: SearchPrototypesInput, call: CallContext) -> SearchPrototypesOutput:
    r = await search_prototypes(
        ports.upstream_client(), query=args.query, theme=args.theme, science_team=args.science_team,
        site_code=args.site_code, start_year=args.start_year, end_year=args.end_year, file_type=args.file_type,
        is_published=args.is_published, limit=args.limit, offset=args.offset,
        text_budget=call.cfg.limits.text_budget_summary)
    steps = []
    if r.items:
        steps.append(NextStep(tool="eco_get_prototype_dataset", arguments={"uuid": r.items[0].uuid},
                              why="Its files, locations and DOI."))
    if r.page.next_offset is not None:
        steps.append(NextStep(tool="eco_search_prototype_datasets",
                              arguments={**args.model_dump(exclude_defaults=True), "offset": r.page.next_offset},
                              why="The next page of matches."))
    return SearchPrototypesOutput(
        items=r.items, page=r.page, facets=r.facets, next_steps=steps,
        source=Source(origin="upstream", endpoints=["/prototype/datasets"], api_base_url=call.cfg.eco.base_url))


PSection = Literal["files", "descriptions", "locations", "citations", "related", "all"]
DEFAULT_INCLUDE: tuple[PSection, ...] = ("files", "locations")


class GetPrototypeInput(ToolInput):
    uuid: str = Field(pattern=UUID_PATTERN)
    include: list[PSection] = Field(default_factory=lambda: list(DEFAULT_INCLUDE), max_length=6)
    include_urls: bool = Field(True, description="Signed file URLs (valid about 7 days).")
    files_limit: int = Field(100, ge=1, le=500)
    files_offset: int = Field(0, ge=0)
    text_budget: int = Field(4000, ge=100, le=20000)


class GetPrototypeOutput(PrototypeRecord, Envelope):
    pass


def _detail_steps(rec: PrototypeRecord, args: GetPrototypeInput, call: CallContext) -> list[NextStep]:
    steps = [NextStep(tool="eco_get_citation", arguments={"prototype_uuid": rec.uuid}, why="Cite this dataset.")]
    # Looked up per call: the download tool is another family's and exists only where it is listed.
    listed = {s.name for s in default_registry().listed(http=call.transport == "http")}
    if call.transport == "stdio" and DOWNLOAD_TOOL in listed and rec.files:
        steps.append(NextStep(tool=DOWNLOAD_TOOL, arguments={"prototype_uuid": rec.uuid},
                              why="Save its files locally (MD5-checked)."))
    if rec.files_page and rec.files_page.next_offset is not None:
        steps.append(NextStep(tool="eco_get_prototype_dataset", arguments={
            "uuid": rec.uuid, "include": ["files"], "files_offset": rec.files_page.next_offset,
            "files_limit": args.files_limit, "include_urls": args.include_urls}, why="The next page of files."))
    return steps


async def get_prototype_tool(args: GetPrototypeInput, call: CallContext) -> GetPrototypeOutput:
    a = await prototype_detail(ports.upstream_client(), uuid=args.uuid, include=list(args.include),
                               include_urls=args.include_urls, files_limit=args.files_limit,
                               files_offset=args.files_offset, text_budget=args.text_budget)
    endpoints = ["/prototype/datasets/{uuid}"] + (["/prototype/data/{uuid}"] if a.record.files is not None
                                                  and args.include_urls else [])
    return GetPrototypeOutput(**dict(a.record), resolved=a.resolved, notes=a.notes,
                              next_steps=_detail_steps(a.record, args, call),
                              source=Source(origin="upstream", endpoints=endpoints, api_base_url=call.cfg.eco.base_url))


TOOLS = [
    ToolSpec(
        name="eco_search_prototype_datasets",
        title="Search prototype datasets",
        description=(
            "Search NEON's prototype (experimental) datasets, each with its own DOI. The list is cached and "
            "searched locally. Filter by query words (title, abstract, keywords), theme prefix, science team, "
            "site code, years (overlap), file type, published. Returns summaries, paging and facets."
        ),
        surface="discovery",
        input_model=SearchPrototypesInput,
        output_model=SearchPrototypesOutput,
        read=search_prototypes_tool,
        endpoints=("GET /prototype/datasets",),
    ),
    ToolSpec(
        name="eco_get_prototype_dataset",
        title="Prototype dataset record",
        description=(
            "One prototype dataset by uuid: title, abstract, years, DOI, themes, teams, sites, keywords. include: "
            "files (default; sizes, MD5s, signed URLs unless include_urls=false; paged), locations (default), "
            "descriptions, citations, related, or all. Text is clipped to text_budget characters."
        ),
        surface="discovery",
        input_model=GetPrototypeInput,
        output_model=GetPrototypeOutput,
        read=get_prototype_tool,
        endpoints=("GET /prototype/datasets/{uuid}", "GET /prototype/data/{uuid}"),
        page_lists={"files": "filesPage"},
    ),
]
