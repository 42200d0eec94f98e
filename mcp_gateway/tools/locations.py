"""Registration of the locations family's tools (families/locations.py)."""

from __future__ import annotations

from families import locations
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_find_locations",
        title="Find named locations",
        description=(
            "Find locations in NEON's tree (REALM > domains > sites > towers, plots, sensor positions) below root"
            " or site_codes by location_type, query or nearness to latitude/longitude (radius_km); a site walk "
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
            "One named location's record (type, coordinates, sensor offsets); include adds properties, hierarchy, "
            "children (paged), history, polygon."
        ),
        surface="discovery",
        input_model=locations.GetLocationInput,
        output_model=locations.GetLocationOutput,
        read=locations.get_location,
        endpoints=("GET /locations/{locationName}",),
        page_lists={"children": "childrenPage"},
    ),
]
