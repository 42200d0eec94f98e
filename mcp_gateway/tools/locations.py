"""Registration of the locations family's tools (families/locations.py)."""

from __future__ import annotations

from families import locations
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_find_locations",
        title="Find named locations",
        description=(
            "Walk NEON's location tree (REALM > domains > sites > towers, levels, booms, huts, soil arrays, "
            "plots, sensor positions) below root or site_codes; filter by location_type, query, or a point "
            "(latitude/longitude, nearest first within radius_km). REALM or a domain with SITE or DOMAIN, and "
            "stored site subtrees, come from the catalog; else a site walk is one cached request. A site walk "
            "reports typesAvailable."
        ),
        surface="discovery",
        input_model=locations.FindLocationsInput,
        output_model=locations.FindLocationsOutput,
        read=locations.find_locations,
        endpoints=("GET /locations/{locationName}", "GET /locations/sites", "POST /graphql"),
    ),
    ToolSpec(
        name="eco_get_location",
        title="Named location record",
        description=(
            "One named location: type, coordinates, UTM, sensor orientation and offsets. Sections: properties "
            "(default), hierarchy (parentChain to REALM, childrenByType), children (paged, pruned by "
            "location_type), history (up to 100 past positions), polygon, all."
        ),
        surface="discovery",
        input_model=locations.GetLocationInput,
        output_model=locations.GetLocationOutput,
        read=locations.get_location,
        endpoints=("GET /locations/{locationName}",),
        page_lists={"children": "childrenPage"},
    ),
]
