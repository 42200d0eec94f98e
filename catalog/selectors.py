"""The catalog's read API for tools and resources, in one place. Synchronous and in memory (see
catalog.index: call from a thread or through `sync_to_async`); nothing here calls the upstream.

    get_product(product) -> ProductView(product: ProductEntry, resolved)        eco_get_product, empty include
    get_site(site) -> SiteView(site: SiteEntry, products: [ProductEntry], resolved)   eco_get_site
    list_sites() -> [SiteEntry]                                                eco://reference/sites
    list_releases() -> ReleasesView(releases: [ReleaseEntry], latest)          eco://reference/releases
    catalog_versions() -> {catalog: version}                                   cache keys of derived answers

    search_products, search_sites          (catalog.search)
    resolve_product, resolve_site, resolve_release   (catalog.resolve)
    product_availability, site_availability, cell_availability   (catalog.availability)

Errors are EcoError: not_found / ambiguous_input from resolution, catalog_unavailable when the
needed catalog has never been built (call `catalog.services.ensure_catalogs` first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalog.availability import cell_availability, product_availability, site_availability
from catalog.index import CatalogIndex, ProductEntry, ReleaseEntry, SiteEntry, get_index
from catalog.resolve import resolve_product, resolve_release, resolve_site
from catalog.search import search_products, search_sites
from eco_core.errors import EcoError

__all__ = [
    "ProductView",
    "ReleasesView",
    "SiteView",
    "catalog_versions",
    "cell_availability",
    "get_product",
    "get_site",
    "list_releases",
    "list_sites",
    "product_availability",
    "resolve_product",
    "resolve_release",
    "resolve_site",
    "search_products",
    "search_sites",
    "site_availability",
]


@dataclass
class ProductView:
    product: ProductEntry
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass
class SiteView:
    site: SiteEntry
    products: list[ProductEntry]
    resolved: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReleasesView:
    releases: list[ReleaseEntry]
    latest: str | None


def _need(idx: CatalogIndex, catalog: str) -> None:
    info = idx.info.get(catalog)
    if info is None or not info.row_count:
        raise EcoError("catalog_unavailable", f"the {catalog} catalog has not been built yet")


def get_product(product: str, *, index: CatalogIndex | None = None) -> ProductView:
    idx = index or get_index()
    _need(idx, "products")
    r = resolve_product(product, index=idx)
    return ProductView(idx.by_code[r.code], {"product": r.echo()})


def get_site(site: str, *, index: CatalogIndex | None = None) -> SiteView:
    idx = index or get_index()
    _need(idx, "sites")
    r = resolve_site(site, index=idx)
    entry = idx.site_by_code[r.code]
    products = [idx.by_code[c] for c in sorted(entry.products) if c in idx.by_code]
    return SiteView(entry, products, {"site": r.echo()})


def list_sites(*, index: CatalogIndex | None = None) -> list[SiteEntry]:
    idx = index or get_index()
    _need(idx, "sites")
    return list(idx.sites)


def list_releases(*, index: CatalogIndex | None = None) -> ReleasesView:
    idx = index or get_index()
    _need(idx, "releases")
    return ReleasesView(list(idx.releases), max((r.tag for r in idx.releases), default=None))


def catalog_versions(*, index: CatalogIndex | None = None) -> dict[str, int]:
    return dict((index or get_index()).versions)
