"""The GraphQL queries that build the product and site catalogs, each next to its result model.

A full refresh of products + sites is ONE request (CATALOG_QUERY asks both root fields);
products or sites alone is one request each. NEON's GraphQL has no root field for releases
and no "all SITE locations" field, so those catalogs are built from REST (see refresh.py).

Only fields that exist in NEON's GraphQL are asked for: no productScienceTeamAbbr,
productCategory or productCodeLong (catalog.services.build derives them), and no specSize
(a String in GraphQL). The items parse into the upstream client's own record models
(`upstream.models.Product`, `.Site`), the same ones a REST refresh gets.
"""

from __future__ import annotations

from upstream.models import NeonModel, Product, Site

_PRODUCT_FIELDS = """
    productCode productName productDescription productStatus productScienceTeam
    productPublicationFormatType productHasExpanded themes keywords
    releases { release generationDate productDoi { url generationDate } }
    specs { specNumber specType specDescription }
    siteCodes { siteCode availableReleases { release availableMonths } }
"""

_SITE_FIELDS = """
    siteCode siteName siteDescription siteType siteLatitude siteLongitude stateCode stateName
    domainCode domainName deimsId releases { release } dataProducts { dataProductCode }
"""

PRODUCTS_QUERY = "query EcoProductsCatalog { products {" + _PRODUCT_FIELDS + "} }"
SITES_QUERY = "query EcoSitesCatalog { sites {" + _SITE_FIELDS + "} }"
CATALOG_QUERY = "query EcoCatalog { products {" + _PRODUCT_FIELDS + "} sites {" + _SITE_FIELDS + "} }"


class ProductsResult(NeonModel):
    products: list[Product]


class SitesResult(NeonModel):
    sites: list[Site]


class CatalogResult(NeonModel):
    products: list[Product]
    sites: list[Site]


QUERIES: dict[str, tuple[str, type[NeonModel]]] = {
    "products": (PRODUCTS_QUERY, ProductsResult),
    "sites": (SITES_QUERY, SitesResult),
    "products+sites": (CATALOG_QUERY, CatalogResult),
}
