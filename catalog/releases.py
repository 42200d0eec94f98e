"""The releases family's reads: the catalog's releases, newest last, and the release info that
product records carry. The tools eco_list_releases / eco_get_release will read from here.

    list_releases(index=) -> ReleaseList(releases: [ReleaseEntry], latest)
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.checks import built
from catalog.index import CatalogIndex, ReleaseEntry, get_index
from eco_core.wire import WireModel


class ReleaseInfo(WireModel):
    release: str
    generation_date: str | None
    doi: str | None
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
