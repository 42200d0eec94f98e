"""The prototypes family: eco_search_prototype_datasets and eco_get_prototype_dataset. NEON's
experimental datasets (each with its own DOI): the upstream list searched locally, and one
dataset's record with its files.

NEON has a few dozen prototype datasets, so the whole list is one small reply: the upstream
client caches it (`cache.ttl_s.prototype`) and every search after the first is answered in
process without asking the upstream. The catalog is never read.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field

from catalog.text import clip
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from upstream import models as um

UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
DOWNLOAD_TOOL = "eco_download_files"
SECTIONS = ("files", "descriptions", "locations", "citations", "related")


class DoiInfo(WireModel):
    doi: str = Field(description="Bare DOI.")
    url: str
    generation_date: str | None


class PrototypeDatasetSummary(WireModel):
    uuid: str
    project_title: str
    dataset_abstract: str | None
    start_year: int | None
    end_year: int | None
    version: str | None
    is_published: bool | None
    doi: str | None = Field(description="Bare DOI.")
    data_themes: list[str]
    science_teams: list[str]
    site_codes: list[str]
    file_types: list[str]
    file_count: int


class PrototypeFile(WireModel):
    name: str
    file_name: str
    description: str | None
    type: str | None
    size: int
    md5: str | None
    url: str | None  # signed, valid about 7 days; null when elided


# -- eco_search_prototype_datasets -------------------------------------------------------------

class SearchPrototypesInput(ToolInput):
    query: str | None = Field(None, max_length=500, description="All words in title, abstract or keywords.")
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
    facets: dict[str, dict[str, int]] = Field(description="themes, scienceTeams, fileTypes.")


async def search_prototype_datasets(args: SearchPrototypesInput, call: CallContext) -> SearchPrototypesOutput:
    datasets = await call.client.prototype_datasets()
    hits = [ds for ds in datasets if _matches(ds, args)]
    facets: dict[str, Counter[str]] = {"themes": Counter(), "scienceTeams": Counter(), "fileTypes": Counter()}
    for ds in hits:
        facets["themes"].update(set(ds.data_themes))
        facets["scienceTeams"].update(set(ds.science_teams))
        facets["fileTypes"].update(set(_file_types(ds)))
    window = hits[args.offset: args.offset + args.limit]
    budget = call.cfg.limits.text_budget_summary
    items = [_summary(ds, budget) for ds in window]
    pg = page(args.offset, args.limit, len(window), len(hits))
    steps = []
    if items:
        steps.append(NextStep(tool="eco_get_prototype_dataset", arguments={"uuid": items[0].uuid},
                              why="Its files, locations and DOI."))
    if pg.next_offset is not None:
        steps.append(NextStep(tool="eco_search_prototype_datasets",
                              arguments={**args.model_dump(exclude_defaults=True), "offset": pg.next_offset},
                              why="The next page of matches."))
    return SearchPrototypesOutput(
        items=items, page=pg, facets={k: dict(sorted(c.items())) for k, c in facets.items()}, next_steps=steps,
        source=Source(origin="upstream", endpoints=["/prototype/datasets"], api_base_url=call.cfg.eco.base_url))


def _matches(ds: um.PrototypeDataset, args: SearchPrototypesInput) -> bool:
    words = (args.query or "").lower().split()
    if words:
        hay = " ".join([ds.project_title, ds.dataset_abstract or "", *ds.keywords]).lower()
        if not all(w in hay for w in words):
            return False
    theme = (args.theme or "").lower()
    if theme and not any(t.lower().startswith(theme) for t in ds.data_themes):
        return False
    # A substring covers the abbreviation too: upstream writes "Aquatic Observational Systems (AOS)".
    team = (args.science_team or "").lower()
    if team and not any(team in t.lower() for t in ds.science_teams):
        return False
    if args.site_code and args.site_code.upper() not in _site_codes(ds):
        return False
    first, last = ds.start_year, ds.end_year if ds.end_year is not None else ds.start_year
    if args.start_year is not None and (last is None or last < args.start_year):
        return False
    if args.end_year is not None and (first is None or first > args.end_year):
        return False
    file_type = (args.file_type or "").lower()
    if file_type and file_type not in (t.lower() for t in _file_types(ds)):
        return False
    return args.is_published is None or ds.is_published is args.is_published


def _summary(ds: um.PrototypeDataset, text_budget: int) -> PrototypeDatasetSummary:
    info = _doi_info(ds)
    return PrototypeDatasetSummary(
        uuid=ds.uuid, project_title=ds.project_title, dataset_abstract=clip(ds.dataset_abstract, text_budget)[0],
        start_year=ds.start_year, end_year=ds.end_year, version=ds.version, is_published=ds.is_published,
        doi=info.doi if info else None, data_themes=ds.data_themes, science_teams=ds.science_teams,
        site_codes=_site_codes(ds), file_types=_file_types(ds), file_count=len(ds.data.files) if ds.data else 0,
    )


# -- eco_get_prototype_dataset -----------------------------------------------------------------

PSection = Literal["files", "descriptions", "locations", "citations", "related", "all"]
DEFAULT_INCLUDE: tuple[PSection, ...] = ("files", "locations")


class GetPrototypeInput(ToolInput):
    uuid: str = Field(pattern=UUID_PATTERN)
    # A plain default (pydantic copies it per instance) so the inputSchema states it: absent is not [].
    include: list[PSection] = Field(list(DEFAULT_INCLUDE), max_length=6, description="[]: the compact base record.")
    include_urls: bool = Field(True, description="Signed file URLs (valid about 7 days).")
    files_limit: int = Field(100, ge=1, le=500)
    files_offset: int = Field(0, ge=0)
    text_budget: int = Field(4000, ge=100, le=20000)

    def sections(self) -> set[str]:
        if "all" in self.include:
            return set(SECTIONS)
        # Empty is the compact base record (the spec's convention); absent is DEFAULT_INCLUDE.
        return set(self.include)


class GetPrototypeOutput(Envelope):
    uuid: str
    project_title: str
    dataset_abstract: str | None
    abstract_truncated: bool
    start_year: int | None
    end_year: int | None
    version: str | None
    is_published: bool | None
    doi: DoiInfo | None
    data_themes: list[str]
    science_teams: list[str]
    site_codes: list[str]
    file_types: list[str]
    keywords: list[str]
    date_uploaded: str | None
    project_description: str | None
    design_description: str | None
    metadata_description: str | None
    study_area_description: str | None
    version_description: str | None
    related_versions: list[dict[str, Any]]
    locations: list[dict[str, Any]] | None
    publication_citations: list[dict[str, Any]] | None
    related_data_products: list[dict[str, Any]] | None
    data_url: str | None
    data_locations: list[dict[str, Any]]
    files: list[PrototypeFile] | None
    files_page: Page | None
    urls_elided: bool


async def get_prototype_dataset(args: GetPrototypeInput, call: CallContext) -> GetPrototypeOutput:
    client = call.client
    wanted = args.sections()
    ds = await client.prototype_dataset(args.uuid.lower())
    files: list[PrototypeFile] | None = None
    files_page: Page | None = None
    notes: list[str] = []
    endpoints = ["/prototype/datasets/{uuid}"]
    if "files" in wanted:
        # The dataset record lists the files without URLs; only the signed URLs need the data endpoint.
        if args.include_urls:
            listed = (await client.prototype_data(ds.uuid)).files
            endpoints.append("/prototype/data/{uuid}")
        else:
            listed = ds.data.files if ds.data else []
        window = listed[args.files_offset: args.files_offset + args.files_limit]
        files = [_file(f, args.include_urls) for f in window]
        files_page = page(args.files_offset, args.files_limit, len(window), len(listed))
        if args.include_urls and files:
            notes.append("File URLs are signed and expire about 7 days after this call; they need no token.")
    abstract, cut = clip(ds.dataset_abstract, args.text_budget)
    described = "descriptions" in wanted

    def text(value: str | None) -> str | None:
        return clip(value, args.text_budget)[0] if described else None

    return GetPrototypeOutput(
        uuid=ds.uuid, project_title=ds.project_title, dataset_abstract=abstract, abstract_truncated=cut,
        start_year=ds.start_year, end_year=ds.end_year, version=ds.version, is_published=ds.is_published,
        doi=_doi_info(ds), data_themes=ds.data_themes, science_teams=ds.science_teams, site_codes=_site_codes(ds),
        file_types=_file_types(ds), keywords=ds.keywords, date_uploaded=ds.date_uploaded,
        project_description=text(ds.project_description), design_description=text(ds.design_description),
        metadata_description=text(ds.metadata_description),
        study_area_description=text(ds.study_area_description),
        version_description=text(ds.version_description),
        related_versions=_dump(ds.related_versions),
        locations=_dump(ds.locations) if "locations" in wanted else None,
        publication_citations=ds.publication_citations if "citations" in wanted else None,
        related_data_products=_dump(ds.related_data_products) if "related" in wanted else None,
        data_url=ds.data.url if ds.data else None,
        data_locations=_dump(ds.data.data_locations) if ds.data else [],
        files=files, files_page=files_page, urls_elided=not (args.include_urls and files is not None),
        resolved={"uuid": ds.uuid, "include": sorted(wanted)}, notes=notes,
        next_steps=_detail_steps(ds.uuid, files, files_page, args, call),
        source=Source(origin="upstream", endpoints=endpoints, api_base_url=call.cfg.eco.base_url))


def _detail_steps(uuid: str, files: list[PrototypeFile] | None, files_page: Page | None, args: GetPrototypeInput,
                  call: CallContext) -> list[NextStep]:
    steps = [NextStep(tool="eco_get_citation", arguments={"prototype_uuid": uuid}, why="Cite this dataset.")]
    # The download tool is another family's, stdio-only, and may be left out: named only where listed.
    if DOWNLOAD_TOOL in call.listed_tools and files:
        steps.append(NextStep(tool=DOWNLOAD_TOOL, arguments={"prototype_uuid": uuid},
                              why="Save its files locally (MD5-checked)."))
    if files_page and files_page.next_offset is not None:
        steps.append(NextStep(tool="eco_get_prototype_dataset", arguments={
            "uuid": uuid, "include": ["files"], "files_offset": files_page.next_offset,
            "files_limit": args.files_limit, "include_urls": args.include_urls}, why="The next page of files."))
    return steps


# -- from the upstream's dataset records -------------------------------------------------------

def _doi_info(ds: um.PrototypeDataset) -> DoiInfo | None:
    if ds.doi is None:
        return None
    url = ds.doi.url
    bare = url.split("doi.org/", 1)[1] if "doi.org/" in url else url
    return DoiInfo(doi=bare, url=url, generation_date=ds.doi.generation_date)


def _site_codes(ds: um.PrototypeDataset) -> list[str]:
    return sorted({loc.site_code for loc in ds.locations if loc.site_code})


def _file_types(ds: um.PrototypeDataset) -> list[str]:
    return [t.name for t in ds.file_types]


def _file(f: um.NeonPrototypeFile, with_url: bool) -> PrototypeFile:
    return PrototypeFile(name=f.name, file_name=f.file_name, description=f.description,
                         type=f.type.name if f.type else None, size=f.size, md5=f.md5,
                         url=f.url if with_url else None)


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json") if hasattr(i, "model_dump") else i for i in items]
