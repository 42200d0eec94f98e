"""Prototype datasets: the upstream list (one cached request, `cache.ttl_s.prototype`) searched
locally, and one dataset's record with its files.

NEON has a few dozen prototype datasets, so the whole list is one small reply: caching it and
filtering in process answers every search after the first without asking the upstream."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from catalog.text import clip
from eco_core.wire import Answer, Page, WireModel, page
from upstream import models as um
from upstream.client import UpstreamClient

SECTIONS = ("files", "descriptions", "locations", "citations", "related")
DEFAULT_SECTIONS = ("files", "locations")


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


class PrototypeRecord(WireModel):
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


@dataclass(frozen=True)
class PrototypeSearch:
    items: list[PrototypeDatasetSummary]
    page: Page
    facets: dict[str, dict[str, int]]


def doi_info(ds: um.PrototypeDataset) -> DoiInfo | None:
    if ds.doi is None:
        return None
    url = ds.doi.url
    bare = url.split("doi.org/", 1)[1] if "doi.org/" in url else url
    return DoiInfo(doi=bare, url=url, generation_date=ds.doi.generation_date)


def _site_codes(ds: um.PrototypeDataset) -> list[str]:
    return sorted({loc.site_code for loc in ds.locations if loc.site_code})


def _file_types(ds: um.PrototypeDataset) -> list[str]:
    return [t.name for t in ds.file_types]


def _matches(ds: um.PrototypeDataset, *, words: list[str], theme: str | None, team: str | None,
             site_code: str | None, start_year: int | None, end_year: int | None, file_type: str | None,
             is_published: bool | None) -> bool:
    if words:
        hay = " ".join([ds.project_title, ds.dataset_abstract or "", *ds.keywords]).lower()
        if not all(w in hay for w in words):
            return False
    if theme and not any(t.lower().startswith(theme) for t in ds.data_themes):
        return False
    # A substring covers the abbreviation too: upstream writes "Aquatic Observational Systems (AOS)".
    if team and not any(team in t.lower() for t in ds.science_teams):
        return False
    if site_code and site_code not in _site_codes(ds):
        return False
    first, last = ds.start_year, ds.end_year if ds.end_year is not None else ds.start_year
    if start_year is not None and (last is None or last < start_year):
        return False
    if end_year is not None and (first is None or first > end_year):
        return False
    if file_type and file_type not in (t.lower() for t in _file_types(ds)):
        return False
    return is_published is None or ds.is_published is is_published


def summary(ds: um.PrototypeDataset, text_budget: int) -> PrototypeDatasetSummary:
    info = doi_info(ds)
    return PrototypeDatasetSummary(
        uuid=ds.uuid, project_title=ds.project_title, dataset_abstract=clip(ds.dataset_abstract, text_budget)[0],
        start_year=ds.start_year, end_year=ds.end_year, version=ds.version, is_published=ds.is_published,
        doi=info.doi if info else None, data_themes=ds.data_themes, science_teams=ds.science_teams,
        site_codes=_site_codes(ds), file_types=_file_types(ds), file_count=len(ds.data.files) if ds.data else 0,
    )


async def search_prototypes(client: UpstreamClient, *, query: str | None = None, theme: str | None = None,
                            science_team: str | None = None, site_code: str | None = None,
                            start_year: int | None = None, end_year: int | None = None,
                            file_type: str | None = None, is_published: bool | None = None,
                            limit: int = 25, offset: int = 0, text_budget: int = 300) -> PrototypeSearch:
    datasets = await client.prototype_datasets()
    hits = [ds for ds in datasets if _matches(
        ds, words=(query or "").lower().split(), theme=(theme or "").lower() or None,
        team=(science_team or "").lower() or None, site_code=site_code.upper() if site_code else None,
        start_year=start_year, end_year=end_year, file_type=(file_type or "").lower() or None,
        is_published=is_published)]
    facets: dict[str, Counter[str]] = {"themes": Counter(), "scienceTeams": Counter(), "fileTypes": Counter()}
    for ds in hits:
        facets["themes"].update(set(ds.data_themes))
        facets["scienceTeams"].update(set(ds.science_teams))
        facets["fileTypes"].update(set(_file_types(ds)))
    window = hits[offset: offset + limit]
    return PrototypeSearch(items=[summary(ds, text_budget) for ds in window],
                           page=page(offset, limit, len(window), len(hits)),
                           facets={k: dict(sorted(c.items())) for k, c in facets.items()})


def _file(f: um.PrototypeFile, with_url: bool) -> PrototypeFile:
    return PrototypeFile(name=f.name, file_name=f.file_name, description=f.description,
                         type=f.type.name if f.type else None, size=f.size, md5=f.md5,
                         url=f.url if with_url else None)


def _dump(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json") if hasattr(i, "model_dump") else i for i in items]


async def prototype_detail(client: UpstreamClient, *, uuid: str, include: list[str], include_urls: bool,
                           files_limit: int, files_offset: int, text_budget: int) -> Answer[PrototypeRecord]:
    wanted = set(SECTIONS) if "all" in include else set(include or DEFAULT_SECTIONS)
    ds = await client.prototype_dataset(uuid.lower())
    files: list[PrototypeFile] | None = None
    files_page: Page | None = None
    notes: list[str] = []
    if "files" in wanted:
        # The dataset record lists the files without URLs; only the signed URLs need the data endpoint.
        source = (await client.prototype_data(ds.uuid)).files if include_urls else (ds.data.files if ds.data else [])
        window = source[files_offset: files_offset + files_limit]
        files = [_file(f, include_urls) for f in window]
        files_page = page(files_offset, files_limit, len(window), len(source))
        if include_urls and files:
            notes.append("File URLs are signed and expire about 7 days after this call; they need no token.")
    abstract, cut = clip(ds.dataset_abstract, text_budget)
    desc = "descriptions" in wanted

    def text(value: str | None) -> str | None:
        return clip(value, text_budget)[0] if desc else None

    record = PrototypeRecord(
        uuid=ds.uuid, project_title=ds.project_title, dataset_abstract=abstract, abstract_truncated=cut,
        start_year=ds.start_year, end_year=ds.end_year, version=ds.version, is_published=ds.is_published,
        doi=doi_info(ds), data_themes=ds.data_themes, science_teams=ds.science_teams, site_codes=_site_codes(ds),
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
        files=files, files_page=files_page, urls_elided=not (include_urls and files is not None),
    )
    return Answer(record=record, resolved={"uuid": ds.uuid, "include": sorted(wanted)}, notes=notes,
                  from_upstream=True)
