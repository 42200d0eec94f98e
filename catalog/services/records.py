"""Typed views of the upstream records the catalogs are built from.

NEON's GraphQL and REST spell the shared fields the same way, so one model per record serves
both; fields GraphQL lacks (productCodeLong, productCodePresentation, productCategory,
productScienceTeamAbbr) are optional here and derived in catalog.services.build when absent.
Extra fields are ignored; a relied-on field that is missing or changes type fails validation,
which the refresh reports as upstream_error and keeps the old catalog.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Rec(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class AvailableRelease(_Rec):
    release: str
    availableMonths: list[str] = Field(default_factory=list)


class ProductSite(_Rec):
    siteCode: str
    availableMonths: list[str] = Field(default_factory=list)
    availableReleases: list[AvailableRelease] = Field(default_factory=list)


class Doi(_Rec):
    url: str | None = None
    generationDate: str | None = None


class ProductRelease(_Rec):
    release: str
    generationDate: str | None = None
    productDoi: Doi | None = None


class Spec(_Rec):
    specNumber: str
    # GraphQL says String, REST says int: both are accepted, nothing relies on it.
    specSize: int | str | None = None


class ProductRecord(_Rec):
    productCode: str
    productName: str
    productDescription: str | None = None
    productStatus: str
    productCodeLong: str | None = None
    productCodePresentation: str | None = None
    productCategory: str | None = None
    productScienceTeam: str | None = None
    productScienceTeamAbbr: str | None = None
    productPublicationFormatType: str | None = None
    productHasExpanded: bool | None = None
    themes: list[str] | None = None
    keywords: list[str] | None = None
    releases: list[ProductRelease] | None = None
    specs: list[Spec] | None = None
    siteCodes: list[ProductSite] | None = None

    @field_validator("productCode")
    @classmethod
    def _code_shape(cls, v: str) -> str:
        if not (v.startswith("DP") and v.count(".") == 2):
            raise ValueError(f"not a product code: {v!r}")
        return v


class SiteRelease(_Rec):
    release: str


class SiteProduct(_Rec):
    dataProductCode: str


class SiteRecord(_Rec):
    siteCode: str
    siteName: str
    siteDescription: str | None = None
    siteType: str
    siteLatitude: float
    siteLongitude: float
    stateCode: str
    stateName: str | None = None
    domainCode: str
    domainName: str | None = None
    deimsId: str | None = None
    releases: list[SiteRelease] | None = None
    dataProducts: list[SiteProduct] | None = None


class Artifact(_Rec):
    name: str
    type: str | None = None
    size: int | None = None
    md5: str | None = None


class ReleaseProduct(_Rec):
    productCode: str
    productDoi: str | None = None


class ReleaseRecord(_Rec):
    release: str
    uuid: str | None = None
    generationDate: str | None = None
    artifacts: list[Artifact] | None = None
    dataProducts: list[ReleaseProduct] | None = None


class LocationRecord(_Rec):
    locationName: str
    locationType: str
    locationDescription: str | None = None
    domainCode: str | None = None
    siteCode: str | None = None
    locationParent: str | None = None
    locationDecimalLatitude: float | None = None
    locationDecimalLongitude: float | None = None
    locationElevation: float | None = None
    locationUtmEasting: float | None = None
    locationUtmNorthing: float | None = None
    locationUtmZone: int | None = None
    locationUtmHemisphere: str | None = None


class LocationTree(_Rec):
    """A `hierarchy=true` record: only the child tree is used (for the domain list)."""

    locationName: str
    locationType: str
    locationDescription: str | None = None
    locationChildHierarchy: list[LocationTree] | None = None
