"""Site selectors: elevations for site search, and the site record of eco_get_site."""

from __future__ import annotations

from typing import Any

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
