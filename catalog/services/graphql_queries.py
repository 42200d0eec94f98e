"""The GraphQL queries that build the product and site catalogs, each next to its result model.

A full refresh of products + sites is ONE request (CATALOG_QUERY asks both root fields);
products or sites alone is one request each. NEON's GraphQL has no root field for releases
and no "all SITE locations" field, so those catalogs are built from REST (see refresh.py).

Only fields that exist in NEON's GraphQL are asked for: no productScienceTeamAbbr,
productCategory or productCodeLong (they are derived), and `specSize` would be a String.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from catalog.services.records import ProductRecord, SiteRecord

_PRODUCT_FIELDS = """
    productCode productName productDescription productStatus productScienceTeam
    productPublicationFormatType productHasExpanded themes keywords
    releases { release generationDate productDoi { url generationDate } }
    specs { specNumber }
    siteCodes { siteCode availableReleases { release availableMonths } }
"""

_SITE_FIELDS = """
    siteCode siteName siteDescription siteType siteLatitude siteLongitude stateCode stateName
    domainCode domainName deimsId releases { release } dataProducts { dataProductCode }
"""

PRODUCTS_QUERY = "query EcoProductsCatalog { products {" + _PRODUCT_FIELDS + "} }"
SITES_QUERY = "query EcoSitesCatalog { sites {" + _SITE_FIELDS + "} }"
CATALOG_QUERY = "query EcoCatalog { products {" + _PRODUCT_FIELDS + "} sites {" + _SITE_FIELDS + "} }"


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ProductsResult(_Result):
    products: list[ProductRecord]


class SitesResult(_Result):
    sites: list[SiteRecord]


class CatalogResult(_Result):
    products: list[ProductRecord]
    sites: list[SiteRecord]


QUERIES: dict[str, tuple[str, type[_Result]]] = {
    "products": (PRODUCTS_QUERY, ProductsResult),
    "sites": (SITES_QUERY, SitesResult),
    "products+sites": (CATALOG_QUERY, CatalogResult),
}
