"""Upstream records → unsaved catalog rows. Pure functions: no database, no network.

Fields GraphQL does not offer are derived the way NEON forms them in REST, so a catalog built
from GraphQL equals one built from REST (tests/catalog/test_refresh_parity.py):
productCodeLong = NEON.DOM.SITE.<code>, productCodePresentation = NEON.<code minus revision>,
productCategory = "Level <n> Data Product", team abbreviation = the parenthesised part of the
team name.
"""

from __future__ import annotations

import re
from datetime import datetime

from catalog import months
from catalog.models import Location, Product, ProductSiteAvailability, Release, Site
from catalog.services.records import (
    LocationRecord,
    LocationTree,
    ProductRecord,
    ReleaseRecord,
    SiteRecord,
)

_TEAM_ABBR = re.compile(r"\(([A-Z]{2,4})\)\s*$")


def product_level(code: str) -> int:
    return int(code[2])


def _team_abbr(team: str | None) -> str:
    m = _TEAM_ABBR.search(team or "")
    return m.group(1) if m else ""


def _parse_dt(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def build_products(records: list[ProductRecord]) -> tuple[list[Product], list[ProductSiteAvailability]]:
    products: list[Product] = []
    cells: list[ProductSiteAvailability] = []
    for r in records:
        code = r.productCode
        rels = sorted(r.releases or [], key=lambda x: x.release)
        maybe_cells = [_cell(code, s) for s in (r.siteCodes or [])]
        product_cells = [c for c in maybe_cells if c is not None]
        cells.extend(product_cells)
        products.append(
            Product(
                product_code=code,
                product_code_long=r.productCodeLong or f"NEON.DOM.SITE.{code}",
                product_code_presentation=r.productCodePresentation or f"NEON.{code.rsplit('.', 1)[0]}",
                product_name=r.productName,
                product_description=r.productDescription or "",
                product_status=r.productStatus,
                product_category=r.productCategory or f"Level {product_level(code)} Data Product",
                product_science_team=r.productScienceTeam or "",
                product_science_team_abbr=r.productScienceTeamAbbr or _team_abbr(r.productScienceTeam),
                product_publication_format_type=r.productPublicationFormatType or "",
                product_has_expanded=bool(r.productHasExpanded),
                level=product_level(code),
                themes=list(r.themes or []),
                keywords=list(r.keywords or []),
                latest_release=rels[-1].release if rels else "",
                releases=[
                    {
                        "release": x.release,
                        "generationDate": x.generationDate,
                        "doi": x.productDoi.url if x.productDoi else None,
                        "doiGenerationDate": x.productDoi.generationDate if x.productDoi else None,
                    }
                    for x in rels
                ],
                specs_count=len(r.specs or []),
                site_count=len(product_cells),
                first_month=min((c.first_month for c in product_cells), default=""),
                last_month=max((c.last_month for c in product_cells), default=""),
            )
        )
    return products, cells


def _cell(code: str, s) -> ProductSiteAvailability | None:
    by_release = {a.release: months.to_ranges(a.availableMonths) for a in s.availableReleases if a.availableMonths}
    if not by_release:
        return None
    all_months = {m for a in s.availableReleases for m in a.availableMonths}
    return ProductSiteAvailability(
        product_code=code,
        site_code=s.siteCode,
        by_release=dict(sorted(by_release.items())),
        first_month=min(all_months),
        last_month=max(all_months),
        month_count=len(all_months),
    )


def build_sites(records: list[SiteRecord]) -> list[Site]:
    return [
        Site(
            site_code=r.siteCode,
            site_name=r.siteName,
            site_description=r.siteDescription or "",
            site_type=r.siteType,
            state_code=r.stateCode,
            state_name=r.stateName or "",
            domain_code=r.domainCode,
            domain_name=r.domainName or "",
            latitude=r.siteLatitude,
            longitude=r.siteLongitude,
            deims_id=r.deimsId or "",
            releases=sorted({x.release for x in r.releases or []}),
            product_count=len({p.dataProductCode for p in r.dataProducts or []}),
        )
        for r in records
    ]


def build_releases(records: list[ReleaseRecord]) -> list[Release]:
    return [
        Release(
            tag=r.release,
            uuid=r.uuid or "",
            generation_date=_parse_dt(r.generationDate),
            product_count=len(r.dataProducts or []),
            artifacts=[{"name": a.name, "type": a.type, "size": a.size, "md5": a.md5} for a in r.artifacts or []],
            product_dois={p.productCode: p.productDoi for p in r.dataProducts or [] if p.productDoi},
        )
        for r in records
        if r.release != "PROVISIONAL"
    ]


def build_locations(sites: list[LocationRecord], realm: LocationTree | None) -> list[Location]:
    rows = [
        Location(
            name=r.locationName,
            location_type=r.locationType,
            description=r.locationDescription or "",
            domain_code=r.domainCode or "",
            site_code=r.siteCode or "",
            parent=r.locationParent or "",
            latitude=r.locationDecimalLatitude,
            longitude=r.locationDecimalLongitude,
            elevation=r.locationElevation,
            utm_easting=r.locationUtmEasting,
            utm_northing=r.locationUtmNorthing,
            utm_zone=r.locationUtmZone,
            utm_hemisphere=r.locationUtmHemisphere or "",
        )
        for r in sites
        if r.locationType.upper() == "SITE"
    ]
    if realm:
        for d in realm.locationChildHierarchy or []:
            if d.locationType.upper() == "DOMAIN":
                rows.append(Location(name=d.locationName, location_type="DOMAIN",
                                     description=d.locationDescription or "",
                                     domain_code=d.locationName, parent=realm.locationName))
    return rows
