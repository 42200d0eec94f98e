"""Release facts every family reads: the release info product records carry, the catalog's
release list, and DOIs as NEON writes them. The releases family itself is families/releases.py."""

from __future__ import annotations

from dataclasses import dataclass

from catalog.checks import built
from catalog.index import CatalogIndex, ReleaseEntry, get_index
from eco_core.wire import WireModel

DOI_PREFIX = "https://doi.org/"


class ReleaseInfo(WireModel):
    release: str
    generation_date: str | None
    doi: str | None
    doi_url: str | None = None
    doi_generation_date: str | None


@dataclass(frozen=True)
class ReleaseList:
    releases: list[ReleaseEntry]
    latest: str | None


def list_releases(*, index: CatalogIndex | None = None) -> ReleaseList:
    """Every release in the catalog and the newest tag; catalog_unavailable before the first build."""
    idx = index or get_index()
    built(idx, "releases")
    return ReleaseList(list(idx.releases), max((r.tag for r in idx.releases), default=None))


def doi_link(doi: str | None) -> str | None:
    """A DOI as a link (https://doi.org/...), whichever form it came in."""
    bare = bare_doi(doi)
    return f"{DOI_PREFIX}{bare}" if bare else None


def bare_doi(url: str | None) -> str | None:
    if not url:
        return None
    return url[len(DOI_PREFIX):] if url.startswith(DOI_PREFIX) else url
