"""Upstream records (the client's own models, `upstream.models`) → unsaved catalog rows.
Pure functions: no database, no network.

Fields GraphQL does not offer are derived the way NEON forms them in REST, so a catalog built
from GraphQL equals one built from REST (tests/catalog/test_refresh.py
`test_graphql_and_rest_build_the_same_catalog`; tests/catalog/test_queries_and_months.py
`test_rest_sample_gives_the_same_derived_fields_it_states`): productCodeLong = NEON.DOM.SITE.<code>, productCodePresentation =
NEON.<code minus revision>, productCategory = "Level <n> Data Product", team abbreviation = the
parenthesised part of the team name.

A field the catalog relies on that the upstream model leaves optional (it is absent from some
forms of the record) is checked here: missing, it raises `upstream_error` naming the field, and
the refresh keeps the old catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import TypeVar

from catalog import months
from catalog.models import LocationRow, ProductRow, ProductSiteAvailabilityRow, ReleaseRow, SiteRow
from eco_core.errors import EcoError
from upstream import models as m

_TEAM_ABBR = re.compile(r"\(([A-Z]{2,4})\)\s*$")

T = TypeVar("T")


def _need(value: T | None, field: str, record: str) -> T:
    if value is None:
        raise EcoError("upstream_error", f"{record}: the upstream record has no {field}",
                       details={"field": field, "reason": "unexpected_body"})
    return value


def product_level(code: str) -> int:
    return int(code[2])


def _product_code(code: str) -> str:
    if not (code.startswith("DP") and code.count(".") == 2):
        raise EcoError("upstream_error", f"productCode: not a product code: {code!r}",
                       details={"field": "productCode", "reason": "unexpected_body"})
    return code


def _team_abbr(team: str | None) -> str:
    found = _TEAM_ABBR.search(team or "")
    return found.group(1) if found else ""


def _parse_dt(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def build_products(records: Iterable[m.Product]) -> tuple[list[ProductRow], list[ProductSiteAvailabilityRow]]:
    products: list[ProductRow] = []
    cells: list[ProductSiteAvailabilityRow] = []
    for r in records:
        code = _product_code(r.product_code)
        rels = sorted(r.releases, key=lambda x: x.release)
        maybe_cells = [_cell(code, s) for s in r.site_codes]
        product_cells = [c for c in maybe_cells if c is not None]
        cells.extend(product_cells)
        products.append(
            ProductRow(
                product_code=code,
                product_code_long=r.product_code_long or f"NEON.DOM.SITE.{code}",
                product_code_presentation=r.product_code_presentation or f"NEON.{code.rsplit('.', 1)[0]}",
                product_name=r.product_name,
                product_description=r.product_description or "",
                product_status=r.product_status,
                product_category=r.product_category or f"Level {product_level(code)} Data Product",
                product_science_team=r.product_science_team or "",
                product_science_team_abbr=r.product_science_team_abbr or _team_abbr(r.product_science_team),
                product_publication_format_type=r.product_publication_format_type or "",
                product_has_expanded=r.product_has_expanded,
                level=product_level(code),
                themes=list(r.themes),
                keywords=list(r.keywords),
                latest_release=rels[-1].release if rels else "",
                releases=[
                    {
                        "release": x.release,
                        "generationDate": x.generation_date,
                        "doi": x.product_doi.url if x.product_doi else None,
                        "doiGenerationDate": x.product_doi.generation_date if x.product_doi else None,
                    }
                    for x in rels
                ],
                specs_count=len(r.specs),
                specs=[{"specNumber": x.spec_number, "specType": x.spec_type, "specDescription": x.spec_description}
                       for x in r.specs],
                site_count=len(product_cells),
                first_month=min((c.first_month for c in product_cells), default=""),
                last_month=max((c.last_month for c in product_cells), default=""),
            )
        )
    return products, cells


def _cell(code: str, s: m.ProductSiteAvailability) -> ProductSiteAvailabilityRow | None:
    by_release = {a.release: months.to_ranges(a.available_months) for a in s.available_releases
                  if a.available_months}
    if not by_release:
        return None
    all_months = {month for a in s.available_releases for month in a.available_months}
    return ProductSiteAvailabilityRow(
        product_code=code,
        site_code=s.site_code,
        by_release=dict(sorted(by_release.items())),
        first_month=min(all_months),
        last_month=max(all_months),
        month_count=len(all_months),
    )


def build_sites(records: Iterable[m.Site]) -> list[SiteRow]:
    return [
        SiteRow(
            site_code=r.site_code,
            site_name=r.site_name,
            site_description=r.site_description or "",
            site_type=r.site_type,
            state_code=r.state_code,
            state_name=r.state_name,
            domain_code=r.domain_code,
            domain_name=r.domain_name,
            latitude=_need(r.site_latitude, "siteLatitude", f"site {r.site_code}"),
            longitude=_need(r.site_longitude, "siteLongitude", f"site {r.site_code}"),
            deims_id=r.deims_id or "",
            releases=sorted({x.release for x in r.releases}),
            product_count=len({p.data_product_code for p in r.data_products}),
        )
        for r in records
    ]


def build_releases(records: list[m.Release]) -> list[ReleaseRow]:
    return [
        ReleaseRow(
            tag=r.release,
            uuid=r.uuid,
            generation_date=_parse_dt(r.generation_date),
            product_count=len(r.data_products),
            artifacts=[{"name": a.name, "type": a.type, "size": a.size, "md5": a.md5} for a in r.artifacts],
            product_dois={p.product_code: p.product_doi for p in r.data_products if p.product_doi},
            product_names={p.product_code: p.product_name for p in r.data_products if p.product_name},
        )
        for r in records
        if r.release != "PROVISIONAL"
    ]


def build_locations(sites: list[m.Location], realm: m.Location | None) -> list[LocationRow]:
    """SITE rows from `/locations/sites`, DOMAIN rows from REALM's child tree."""
    rows = [
        LocationRow(
            name=r.location_name,
            location_type=r.location_type or "",
            description=r.location_description or "",
            domain_code=r.domain_code or "",
            site_code=r.site_code or "",
            parent=r.location_parent or "",
            latitude=r.location_decimal_latitude,
            longitude=r.location_decimal_longitude,
            elevation=r.location_elevation,
            utm_easting=r.location_utm_easting,
            utm_northing=r.location_utm_northing,
            utm_zone=r.location_utm_zone,
            utm_hemisphere=r.location_utm_hemisphere or "",
        )
        for r in sites
        if _need(r.location_type, "locationType", f"location {r.location_name}").upper() == "SITE"
    ]
    if realm:
        _need(realm.location_type, "locationType", f"location {realm.location_name}")
        for d in realm.location_child_hierarchy or []:
            if _need(d.location_type, "locationType", f"location {d.location_name}").upper() == "DOMAIN":
                rows.append(LocationRow(name=d.location_name, location_type="DOMAIN",
                                        description=d.location_description or "",
                                        domain_code=d.location_name, parent=realm.location_name))
    return rows
