"""Site selectors: elevations for site search, and the site record of eco_get_site."""

from __future__ import annotations

from typing import Any

from catalog import resolve
from catalog.index import CatalogIndex
from catalog.queries import availability as av
from catalog.queries.text import clip

Placement = tuple[float | None, float | None, float | None, int | None, str | None]


async def site_elevations(*, client: Any, codes: list[str]) -> dict[str, Placement]:
    """Elevation and UTM (easting, northing, zone, hemisphere) of field sites from the SITE
    location records: one request for all sites, cached per `cache.ttl_s.locations`."""
    wanted = set(codes)
    out: dict[str, Placement] = {}
    for loc in await client.location_sites():
        code = loc.site_code or loc.location_name
        if code in wanted and (loc.location_type or "SITE").upper() == "SITE":
            out[code] = (loc.location_elevation, loc.location_utm_easting, loc.location_utm_northing,
                         loc.location_utm_zone, loc.location_utm_hemisphere)
    return out


SITE_SECTIONS = ("products", "releases", "description", "location")
FIELD_SITES = "https://www.neonscience.org/field-sites"


def _site_products(cells: dict[str, tuple[str | None, av.Cell]], query: str | None) -> list[dict[str, Any]]:
    q = (query or "").strip().lower()
    rows = []
    for code, (title, cell) in sorted(cells.items()):
        if q and q not in code.lower() and q not in (title or "").lower():
            continue
        data = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
        if data is None:
            continue
        rows.append({"product_code": code, "product_name": title, "month_count": data.month_count,
                     "provisional_month_count": data.provisional_month_count, "first_month": data.first_month,
                     "last_month": data.last_month, "ranges": data.ranges, "by_release": data.by_release})
    return rows


def _location(loc: Any) -> dict[str, Any]:
    return {
        "location_name": loc.location_name, "location_description": loc.location_description,
        "location_type": loc.location_type, "latitude": loc.location_decimal_latitude,
        "longitude": loc.location_decimal_longitude, "elevation": loc.location_elevation,
        "utm_easting": loc.location_utm_easting, "utm_northing": loc.location_utm_northing,
        "utm_zone": loc.location_utm_zone, "utm_hemisphere": loc.location_utm_hemisphere,
        "properties": loc.properties,
        "active_periods": [{"activated_date": p.activated_date, "deactivated_date": p.deactivated_date}
                           for p in loc.active_periods],
        "parent": loc.location_parent, "child_count": len(loc.location_children),
    }


def _catalog_site(idx: CatalogIndex, code: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    s = idx.site_by_code[code]
    base = {"site_name": s.name, "site_description": s.description or None, "site_type": s.site_type,
            "site_latitude": s.latitude, "site_longitude": s.longitude, "state_code": s.state_code,
            "state_name": s.state_name, "domain_code": s.domain_code, "domain_name": s.domain_name,
            "deims_id": s.deims_id or None}
    dates = {r.tag: r.generation_date.isoformat().replace("+00:00", "Z") if r.generation_date else None
             for r in idx.releases}
    releases = [{"release": t, "generation_date": dates.get(t), "url": None} for t in sorted(s.releases)]
    cells = {p.code: (p.name, dict(p.cells[code].ranges)) for p in idx.products if code in p.cells}
    return base, releases, cells


def _record_site(rec: Any, tag: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    base = {"site_name": rec.site_name, "site_description": rec.site_description, "site_type": rec.site_type,
            "site_latitude": rec.site_latitude, "site_longitude": rec.site_longitude, "state_code": rec.state_code,
            "state_name": rec.state_name, "domain_code": rec.domain_code, "domain_name": rec.domain_name,
            "deims_id": rec.deims_id}
    releases = [{"release": r.release, "generation_date": r.generation_date, "url": r.url}
                for r in sorted(rec.releases, key=lambda r: r.release)]
    cells = {d.data_product_code: (d.data_product_title,
                                   av.cell_from_upstream(d.available_releases, d.available_months, tag))
             for d in rec.data_products}
    return base, releases, cells


async def site_detail(
    *, idx: CatalogIndex, client: Any, base_url: str, site: str, release: str | None, include: list[str],
    products_query: str | None = None, products_limit: int = 100, products_offset: int = 0, text_budget: int = 4000,
) -> dict[str, Any]:
    r = resolve.resolve_site(site, index=idx)
    resolved: dict[str, Any] = {"site": r.echo()}
    wanted = set(SITE_SECTIONS) if "all" in include else set(include)
    notes: list[str] = []
    tag = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
        base, releases, cells = _record_site(await client.site(r.code, release=tag), tag)
        notes.append(f"The site as published in {tag}.")
    else:
        base, releases, cells = _catalog_site(idx, r.code)
    description, cut = clip(base.pop("site_description"), text_budget)
    if cut:
        notes.append(f"siteDescription clipped to {text_budget} characters.")
    out: dict[str, Any] = {
        "site_code": r.code, **base, "site_description": description if "description" in wanted else None,
        "product_count": len(cells), "latest_release": releases[-1]["release"] if releases else None,
        "urls": {"api": f"{base_url}/sites/{r.code}" + (f"?release={tag}" if tag else ""),
                 "portal": f"{FIELD_SITES}/{r.code.lower()}"},
        "releases": releases if "releases" in wanted else None, "data_products": None,
        "data_products_page": None, "location": None, "resolved": resolved, "notes": notes,
        "from_upstream": tag is not None,
    }
    if "products" in wanted:
        rows = _site_products(cells, products_query)
        page = rows[products_offset:products_offset + products_limit]
        more = products_offset + len(page) < len(rows)
        out["data_products"] = page
        out["data_products_page"] = {"offset": products_offset, "limit": products_limit, "returned": len(page),
                                     "total": len(rows), "next_offset": products_offset + len(page) if more else None}
    if "location" in wanted:
        out["location"] = _location(await client.location(r.code))
        out["from_upstream"] = True
    return out
