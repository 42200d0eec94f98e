"""The location catalog as the location reads take it: the SITE and DOMAIN rows the catalog
refresh stores (about 100 rows), and the stored site subtrees when they may be served
(catalog.location_trees). The reads themselves are families/locations.py; the subtree refresh is
catalog.services.location_subtrees; the resources read LocationRow directly.

    location_catalog(run=None) -> LocationCatalog   synchronous (the ORM): on the catalog-read pool

Reached through catalog.access.location_catalog, which builds a missing catalog first.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.location_trees import Runner, StoredTrees, stored_trees
from catalog.models import LocationRow
from catalog.suggest import nearest
from eco_core.config import get_config
from eco_core.errors import EcoError


@dataclass(frozen=True)
class CatalogLocation:
    name: str
    location_type: str
    description: str
    domain_code: str
    site_code: str
    parent: str
    latitude: float | None
    longitude: float | None
    elevation: float | None


@dataclass(frozen=True)
class LocationCatalog:
    sites: dict[str, CatalogLocation]
    domains: dict[str, CatalogLocation]
    trees: StoredTrees | None = None  # the stored site subtrees, when they may be served
    # Why the catalog could not be had (its rows are then empty): what needs the rows raises it.
    unavailable: EcoError | None = None

    def suggestions(self, text: str) -> list[str]:
        """Up to five names of the sites and domains nearest to `text` (by name, then description):
        names a location argument accepts as they stand."""
        described = {c.name: c.description for c in (*self.sites.values(), *self.domains.values())}
        return nearest(text, described)


def location_catalog(run: Runner | None = None) -> LocationCatalog:
    """The SITE and DOMAIN rows and the stored subtrees, whose later reads go through `run` (see
    catalog.location_trees); catalog_unavailable before the first build."""
    rows = [CatalogLocation(r.name, r.location_type, r.description, r.domain_code, r.site_code, r.parent,
                            r.latitude, r.longitude, r.elevation) for r in LocationRow.objects.all()]
    if not rows:
        raise EcoError("catalog_unavailable", "the locations catalog has not been built yet")
    return LocationCatalog(sites={r.name: r for r in rows if r.location_type == "SITE"},
                           domains={r.name: r for r in rows if r.location_type == "DOMAIN"},
                           trees=stored_trees(get_config(), run))
