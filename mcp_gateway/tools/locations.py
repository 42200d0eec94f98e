"""eco_find_locations and eco_get_location: NEON's named-location tree (REALM > domains > sites >
towers, huts, soil arrays, plots, sensor positions), from the location catalog (SITE and DOMAIN
rows, and every site's subtree once the subtree refresh stored it), else from cached
`hierarchy=true` site subtrees (see catalog.locations)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.access import location_catalog
from catalog.locations import (
    LocationRecord,
    LocationRoot,
    LocationSummary,
    find_locations,
    location_detail,
)
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec

SENSOR_TYPES = ("CONFIG", "BOOM", "LEVEL", "SOIL_PLOT", "SOIL PLOT")


def _item_steps(item: LocationSummary) -> list[NextStep]:
    kind = (item.location_type or "").upper()
    if kind == "SITE":
        return [NextStep(tool="eco_find_locations", arguments={"root": item.location_name},
                         why=f"What {item.location_name} contains (typesAvailable)."),
                NextStep(tool="eco_get_site", arguments={"site": item.location_name},
                         why="Products with data at this site.")]
    steps = [NextStep(tool="eco_get_location", arguments={"name": item.location_name,
                                                         "include": ["hierarchy", "children"]},
                      why=f"{item.location_name}: parents up to REALM and what it holds.")]
    if kind in SENSOR_TYPES and item.site_code:
        steps.append(NextStep(tool="eco_search_products", arguments={"site": item.site_code},
                              why=f"Products measured at {item.site_code} (match HOR.VER in file names)."))
    return steps


# -- eco_find_locations --------------------------------------------------------------------

class FindLocationsInput(ToolInput):
    root: str | None = Field(None, min_length=1, max_length=200,
                             description="REALM (default), a domain, a site code or any location name.")
    site_codes: list[str] | None = Field(None, min_length=1, max_length=20, description="Sites to walk.")
    location_type: str | None = Field(None, max_length=100, description=(
        "e.g. SITE, TOWER, CONFIG, 'OS Plot - mam' (any case); required under REALM or a domain."))
    query: str | None = Field(None, max_length=200, description="Substring of name or description.")
    latitude: float | None = Field(None, ge=-90, le=90)
    longitude: float | None = Field(None, ge=-180, le=180)
    radius_km: float = Field(50.0, gt=0, le=5000)
    include_coordinates: bool = Field(True, description="Coordinates for the page (one batched lookup).")
    max_depth: int = Field(6, ge=1, le=12, description="Levels walked below each root.")
    limit: DefaultLimit = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


class FindLocationsOutput(Envelope):
    roots: list[LocationRoot]
    location_type: str | None
    types_available: dict[str, int] | None = Field(description="Count per type seen (site walk without a type).")
    hierarchy_nodes_scanned: int
    items: list[LocationSummary]
    page: Page


async def find_locations_tool(args: FindLocationsInput, call: CallContext) -> FindLocationsOutput:
    cfg = call.cfg
    cat = await location_catalog(cfg, call.client)
    r = await find_locations(
        client=ports.upstream_client(), catalog=cat, root=args.root, site_codes=args.site_codes,
        location_type=args.location_type, query=args.query, latitude=args.latitude, longitude=args.longitude,
        radius_km=args.radius_km, include_coordinates=args.include_coordinates, max_depth=args.max_depth,
        limit=args.limit, offset=args.offset, max_roots=cfg.limits.max_location_roots,
        coordinates_ttl_s=cfg.cache.ttl_s.locations if cfg.cache.enabled else None)
    steps = _item_steps(r.items[0]) if r.items else []
    if r.page.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_find_locations", arguments={**more, "offset": r.page.next_offset},
                              why="The next page of locations."))
    if r.types_available and len(r.roots) == 1:
        kind = "TOWER" if "TOWER" in r.types_available else next(iter(r.types_available))
        steps.append(NextStep(tool="eco_find_locations",
                              arguments={"root": r.roots[0].location_name, "location_type": kind},
                              why=f"Only the {kind} locations (see typesAvailable for the others)."))
    endpoints = ["/locations/{locationName}"] if r.from_upstream else []
    return FindLocationsOutput(
        roots=r.roots, location_type=r.location_type, types_available=r.types_available,
        hierarchy_nodes_scanned=r.hierarchy_nodes_scanned, items=r.items, page=r.page, resolved=r.resolved,
        notes=r.notes, next_steps=steps,
        source=Source(origin="mixed" if r.from_upstream else "catalog", endpoints=endpoints,
                      api_base_url=cfg.eco.base_url))


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
        input_model=FindLocationsInput,
        output_model=FindLocationsOutput,
        read=find_locations_tool,
        endpoints=("GET /locations/{locationName}", "GET /locations/sites", "POST /graphql"),
    ),
]


# -- eco_get_location ----------------------------------------------------------------------

LocationSection = Literal["properties", "hierarchy", "history", "children", "polygon", "all"]


def _default_include() -> list[LocationSection]:
    return ["properties"]


class GetLocationInput(ToolInput):
    name: str = Field(min_length=1, max_length=200, description="Case-sensitive, except site and domain codes.")
    include: list[LocationSection] = Field(default_factory=_default_include, max_length=6)
    location_type: str | None = Field(None, max_length=100, description="Required for REALM and domains.")
    children_limit: int = Field(50, ge=1, le=500)
    children_offset: int = Field(0, ge=0)
    hierarchy_max_depth: int = Field(3, ge=1, le=12)


class GetLocationOutput(LocationRecord, Envelope):
    pass


def _location_steps(out: LocationRecord, args: GetLocationInput) -> list[NextStep]:
    steps: list[NextStep] = []
    if out.children:
        steps.extend(_item_steps(out.children[0])[:1])
    elif out.children is None and out.location_type != "CONFIG":
        steps.append(NextStep(tool="eco_get_location", arguments={"name": out.location_name, "include": ["children"]},
                              why="What this location holds, by type."))
    if (out.location_type or "").upper() in SENSOR_TYPES and out.site_code:
        steps.append(NextStep(tool="eco_search_products", arguments={"site": out.site_code},
                              why=f"Products measured at {out.site_code}."))
    pg = out.children_page
    if pg and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_location", arguments={**more, "children_offset": pg.next_offset},
                              why="The next page of children."))
    return steps


def _origin(from_upstream: bool, from_catalog: bool) -> Literal["catalog", "upstream", "mixed"]:
    if not from_upstream:
        return "catalog"
    return "mixed" if from_catalog else "upstream"


async def get_location_tool(args: GetLocationInput, call: CallContext) -> GetLocationOutput:
    cfg = call.cfg
    cat = await location_catalog(cfg, call.client)
    a = await location_detail(
        client=ports.upstream_client(), catalog=cat, name=args.name, include=list(args.include),
        location_type=args.location_type, children_limit=args.children_limit, children_offset=args.children_offset,
        hierarchy_max_depth=args.hierarchy_max_depth)
    return GetLocationOutput(**dict(a.record), resolved=a.resolved, notes=a.notes,
                             next_steps=_location_steps(a.record, args),
                             source=Source(origin=_origin(a.from_upstream, a.from_catalog),
                                           endpoints=["/locations/{locationName}"] if a.from_upstream else [],
                                           api_base_url=cfg.eco.base_url))


TOOLS.append(
    ToolSpec(
        name="eco_get_location",
        title="Named location record",
        description=(
            "One named location: type, coordinates, UTM, sensor orientation and offsets. Sections: properties "
            "(default), hierarchy (parentChain to REALM, childrenByType), children (paged, pruned by "
            "location_type), history (up to 100 past positions), polygon, all."
        ),
        surface="discovery",
        input_model=GetLocationInput,
        output_model=GetLocationOutput,
        read=get_location_tool,
        endpoints=("GET /locations/{locationName}",),
        page_lists={"children": "childrenPage"},
    )
)
