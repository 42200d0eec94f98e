"""The locations family: eco_find_locations and eco_get_location. NEON's named-location tree
(REALM > domains > sites > towers, huts, soil arrays, plots, sensor positions) from the location
catalog (its SITE and DOMAIN rows, and every site's subtree once the subtree refresh stored it:
catalog.locations, catalog.location_trees), else from the upstream: a site subtree from one
cached `hierarchy=true` request, coordinates for many locations from one GraphQL `findLocations`.

Upstream cost: REALM or a domain with SITE or DOMAIN is answered from the catalog (no request).
When the catalog holds the site's subtree, a walk of the site or of any node in it,
eco_get_location of such a node (its record, hierarchy and children) and a domain pruned to a
type (when every site of the domain is stored) cost no request either. Otherwise (subtrees not
refreshed yet, built from another upstream, or a name they do not hold) a walk is one
`hierarchy=true` request, cached by the upstream client for `cache.ttl_s.locations` (shared with
eco_get_location's hierarchy and children of that node); coordinates of a page, or of a proximity
search's candidates, are one GraphQL request (then remembered for `cache.ttl_s.locations`).

Field by field, what a stored node answers and what still comes from the upstream:
- tree (name, type, description, parent, children, depth, parentChain, childrenByType): stored,
  from the site's hierarchy=true answer, the same answer the fallback reads.
- coordinates, UTM, orientation, offsets, offsetLocation (its name), activePeriods, properties
  (all of them, name->value and raw) and the polygon: stored, from the node's plain record
  (GraphQL findLocations, fetched by the refresh in batches of 1000). They change when NEON
  moves or re-describes a location, which the refresh's interval follows; storing them is what
  lets the default section (properties) and hierarchy/children of a tower cost nothing.
- locationHistory: always the upstream (`history=true`, which answers the whole record too, so
  a call with history is one request): up to 100 past positions per node, each with its own
  properties and polygon, would multiply the catalog for a section that is rarely asked.
- a stored node whose record GraphQL did not return: its record from the upstream (one request).
- REALM and domain records: always the upstream (the catalog holds no record for them).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from catalog import checks
from catalog.access import location_catalog
from catalog.location_nodes import (
    REALM,
    Node,
    canonical_type,
    catalog_node,
    hierarchy_nodes,
    neon_type,
    of_type,
    sites_near,
    stored_node,
    type_key,
    within,
)
from catalog.location_trees import SiteTree, pruned
from catalog.locations import LocationCatalog
from catalog.suggest import nearest
from eco_core.bounds import Configured
from eco_core.errors import EcoError
from eco_core.memo import memos
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from upstream import models as m
from upstream.client import UpstreamClient

SECTIONS = ("properties", "hierarchy", "history", "children", "polygon")
SENSOR_TYPES = ("CONFIG", "BOOM", "LEVEL", "SOIL_PLOT", "SOIL PLOT")
# NEON's findLocations takes at most 1000 names per request: a proximity search needs every
# candidate's coordinates, so more candidates than that would cost several requests.
PROXIMITY_MAX_CANDIDATES = 1000
# Sites whose centre is this much beyond radius_km may still hold plots inside the circle.
SITE_REACH_KM = 25.0
MAX_HISTORY = 100
SITE_CODE = re.compile(r"^[A-Za-z]{4}$")
DOMAIN_CODE = re.compile(r"^[Dd](0[1-9]|1\d|20)$")
# Failures of the batched coordinate lookup that leave a page without coordinates, not unanswered.
COORDINATES_OPTIONAL = ("upstream_error", "upstream_unavailable", "graphql_error", "rate_limited")
# GraphQL variables keep the names out of the query text (no escaping to get wrong).
COORDINATES_QUERY = (
    "query EcoLocationCoordinates($names: [String!]!) { findLocations(query: {locationNames: $names}) "
    "{ locationName locationType siteCode locationDecimalLatitude locationDecimalLongitude locationElevation } }"
)
ENDPOINT = "/locations/{locationName}"


class LocationRoot(WireModel):
    location_name: str
    location_type: str | None
    from_catalog: bool
    nodes_scanned: int


class LocationSummary(WireModel):
    location_name: str
    location_type: str | None
    location_description: str | None
    site_code: str | None
    location_parent: str | None
    depth: int
    latitude: float | None
    longitude: float | None
    distance_km: float | None


class ParentRef(WireModel):
    location_name: str
    location_type: str | None


class HistoryEntry(WireModel):
    current: bool | None
    start_date: str | None
    end_date: str | None
    latitude: float | None
    longitude: float | None
    elevation: float | None


# -- eco_find_locations --------------------------------------------------------------------------

class FindLocationsInput(ToolInput):
    root: str | None = Field(None, min_length=1, max_length=200,
                             description="REALM (default), a domain, a site code or any location name.")
    site_codes: Annotated[list[str] | None, Configured("limits.max_location_roots", "maxItems")] = Field(
        None, min_length=1)
    location_type: str | None = Field(None, max_length=100, description=(
        "e.g. SITE, TOWER, CONFIG, 'OS Plot - mam' (any case); required under REALM or a domain."))
    query: str | None = Field(None, max_length=200, description="Substring of name or description.")
    latitude: float | None = Field(None, ge=-90, le=90)
    longitude: float | None = Field(None, ge=-180, le=180)
    radius_km: float = Field(50.0, gt=0, le=5000)
    include_coordinates: bool = Field(True)
    max_depth: int = Field(6, ge=1, le=12, description="Levels walked below each root.")
    limit: DefaultLimit = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0)


class FindLocationsOutput(Envelope):
    roots: list[LocationRoot]
    location_type: str | None
    types_available: dict[str, int] | None = Field(description="Count per type (site walk).")
    hierarchy_nodes_scanned: int
    items: list[LocationSummary]
    page: Page


async def find_locations(args: FindLocationsInput, call: CallContext) -> FindLocationsOutput:
    cfg, client = call.cfg, call.client
    if args.root is not None and args.site_codes is not None:
        raise checks.bad("site_codes", "give root or site_codes, not both")
    if (args.latitude is None) != (args.longitude is None):
        raise checks.bad("longitude" if args.latitude is not None else "latitude",
                         "latitude and longitude go together")
    catalog = await _catalog(cfg, client)
    ltype = _stripped(args.location_type)
    notes: list[str] = _catalog_notes(catalog)
    resolved: dict[str, Any] = {}
    roots: list[LocationRoot] = []
    nodes: list[Node] = []
    walk: list[str] = []
    if args.site_codes is not None:
        echoes = [await _site_code(code, catalog, client) for code in args.site_codes]
        # Every resolution is echoed (the spec's common envelope), a code's too.
        resolved["siteCodes"] = echoes
        walk = list(dict.fromkeys(e["siteCode"] for e in echoes))
    else:
        name = _canonical_name(args.root or REALM, catalog)
        resolved["root"] = {"input": args.root or None, "locationName": name}
        if _needs_rows(name, catalog):
            if ltype is None:
                raise checks.bad("location_type", f"required under {name} (for example SITE, TOWER, 'OS Plot - mam')")
            if catalog.unavailable is not None:
                raise catalog.unavailable
            key = type_key(ltype)
            if key in ("site", "domain"):
                nodes = _catalog_rows(catalog, name, key)
                roots.append(LocationRoot(location_name=name, location_type="FIELD" if name == REALM else "DOMAIN",
                                          from_catalog=True, nodes_scanned=len(nodes)))
            else:
                walk = _walk_roots(catalog, name, ltype, args, cfg.limits.max_location_roots)
                notes.append(f"Walked {len(walk)} site(s) under {name}.")
        else:
            walk = [name]
    walked_upstream = False
    if walk:
        field_name = "site_codes" if args.site_codes is not None else "root"
        walked, nodes, walked_upstream = await _walk(client, catalog, walk, field_name, args.max_depth)
        roots.extend(walked)
    scanned = len(nodes)
    types_available = None
    if ltype is None:
        types_available = dict(sorted(Counter(n.location_type or "" for n in nodes).items()))
    else:
        ltype = canonical_type(ltype, (n.location_type for n in nodes))
        nodes = of_type(nodes, ltype)
    if args.query:
        q = args.query.strip().lower()
        nodes = [n for n in nodes if q in n.name.lower() or q in (n.description or "").lower()]
    ttl_s = cfg.cache.ttl_s.locations if cfg.cache.enabled else None
    looked_up = False
    if args.latitude is not None and args.longitude is not None:
        need = [n for n in nodes if not n.placed]
        if len(need) > PROXIMITY_MAX_CANDIDATES:
            raise EcoError(
                "query_too_large",
                f"location_type: {len(need)} locations match, more than a proximity search scans "
                f"({PROXIMITY_MAX_CANDIDATES})", details={"locations": len(need), "max": PROXIMITY_MAX_CANDIDATES},
                hint="Narrow with location_type, query, site_codes or max_depth.")
        await _coordinates(client, need, ttl_s)
        looked_up = bool(need)
        nodes = within(nodes, args.latitude, args.longitude, args.radius_km)
        notes.append(f"Locations within {args.radius_km:g} km of ({args.latitude}, {args.longitude}), nearest first.")
    chosen = nodes[args.offset:args.offset + args.limit]
    if args.include_coordinates and not looked_up:
        missing = [n for n in chosen if not n.placed]
        try:
            await _coordinates(client, missing, ttl_s)
            looked_up = bool(missing)
        except EcoError as exc:
            if exc.code not in COORDINATES_OPTIONAL:
                raise
            notes.append(f"Coordinates left out: the batched GraphQL lookup failed ({exc.code}).")
    items = [_summary(n) for n in chosen]
    pg = page(args.offset, args.limit, len(chosen), len(nodes))
    from_upstream = walked_upstream or looked_up
    return FindLocationsOutput(
        roots=roots, location_type=ltype, types_available=types_available, hierarchy_nodes_scanned=scanned,
        items=items, page=pg, resolved=resolved, notes=notes,
        next_steps=_find_steps(items, pg, types_available, roots, args),
        source=Source(origin="mixed" if from_upstream else "catalog", endpoints=[ENDPOINT] if from_upstream else [],
                      api_base_url=cfg.eco.base_url))


def _find_steps(items: list[LocationSummary], pg: Page, types_available: dict[str, int] | None,
                roots: list[LocationRoot], args: FindLocationsInput) -> list[NextStep]:
    steps = _item_steps(items[0]) if items else []
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_find_locations", arguments={**more, "offset": pg.next_offset},
                              why="The next page of locations."))
    if types_available and len(roots) == 1:
        kind = "TOWER" if "TOWER" in types_available else next(iter(types_available))
        steps.append(NextStep(tool="eco_find_locations",
                              arguments={"root": roots[0].location_name, "location_type": kind},
                              why=f"Only the {kind} locations (see typesAvailable for the others)."))
    return steps


def _walk_roots(catalog: LocationCatalog, name: str, ltype: str, args: FindLocationsInput,
                max_roots: int) -> list[str]:
    """The sites to walk for a type below REALM or a domain (not SITE/DOMAIN: those are catalog rows)."""
    sites = [s for s in catalog.sites.values() if name == REALM or s.domain_code == name]
    if args.latitude is not None and args.longitude is not None:
        sites = sites_near(sites, args.latitude, args.longitude, args.radius_km + SITE_REACH_KM)
    if len(sites) > max_roots:
        raise EcoError(
            "query_too_large",
            f"location_type: {ltype} under {name} means walking {len(sites)} sites (at most {max_roots})",
            details={"sites": len(sites), "maxSites": max_roots},
            hint=f"Give site_codes (up to {max_roots}), or latitude/longitude with a smaller radius_km.")
    return sorted(s.name for s in sites)


async def _walk(client: UpstreamClient, catalog: LocationCatalog, walk: list[str], field_name: str,
                max_depth: int) -> tuple[list[LocationRoot], list[Node], bool]:
    """Each root's nodes: from its stored subtree, else from one (cached) hierarchy=true request;
    and whether any came from the upstream."""
    stored = await asyncio.gather(*(_stored_walk(catalog, w, max_depth) for w in walk))
    fetched = [w for w, hit in zip(walk, stored, strict=True) if hit is None]
    trees = dict(zip(fetched, await asyncio.gather(
        *(_location(client, w, field_name, catalog, hierarchy=True) for w in fetched)), strict=True))
    roots: list[LocationRoot] = []
    nodes: list[Node] = []
    for w, hit in zip(walk, stored, strict=True):
        if hit is not None:
            kind, found = hit
            roots.append(LocationRoot(location_name=w, location_type=kind, from_catalog=True,
                                      nodes_scanned=len(found)))
        else:
            tree = trees[w]
            found = hierarchy_nodes(tree, max_depth)
            roots.append(LocationRoot(location_name=tree.location_name, location_type=tree.location_type,
                                      from_catalog=False, nodes_scanned=len(found)))
        nodes.extend(found)
    return roots, nodes, bool(fetched)


# -- eco_get_location ----------------------------------------------------------------------------

LocationSection = Literal["properties", "hierarchy", "history", "children", "polygon", "all"]


class GetLocationInput(ToolInput):
    name: str = Field(min_length=1, max_length=200, description="Case-sensitive, except site and domain codes.")
    # A plain default (pydantic copies it per instance) so the inputSchema states it: absent is not [].
    include: list[LocationSection] = Field(["properties"], max_length=6, description="[]: the compact base record.")
    location_type: str | None = Field(None, max_length=100, description="Required for REALM and domains.")
    children_limit: int = Field(50, ge=1, le=500)
    children_offset: int = Field(0, ge=0)
    hierarchy_max_depth: int = Field(3, ge=1, le=12)


class GetLocationOutput(Envelope):
    # No docstring: it would become the output schema's description.
    location_name: str
    location_description: str | None
    location_type: str | None
    domain_code: str | None
    site_code: str | None
    location_decimal_latitude: float | None
    location_decimal_longitude: float | None
    location_elevation: float | None
    location_utm_easting: float | None
    location_utm_northing: float | None
    location_utm_hemisphere: str | None
    location_utm_zone: int | None
    alpha_orientation: float | None
    beta_orientation: float | None
    gamma_orientation: float | None
    x_offset: float | None
    y_offset: float | None
    z_offset: float | None
    offset_location: dict[str, Any] | None
    active_periods: list[dict[str, Any]]
    has_polygon: bool
    property_count: int
    location_properties: dict[str, m.PropertyValue] | None
    location_properties_raw: list[dict[str, Any]] | None
    location_polygon: dict[str, Any] | None
    location_parent: str | None
    location_parent_url: str | None
    parent_chain: list[ParentRef] | None
    children_by_type: dict[str, int] | None
    children: list[LocationSummary] | None
    children_page: Page | None
    hierarchy_nodes_scanned: int | None
    location_history: list[HistoryEntry] | None
    history_truncated: bool


async def get_location(args: GetLocationInput, call: CallContext) -> GetLocationOutput:
    cfg, client = call.cfg, call.client
    if not args.name.strip():
        raise checks.bad("name", "must not be empty")
    catalog = await _catalog(cfg, client)
    # Absent, include is the default section (properties); empty, the compact base record.
    wanted = set(SECTIONS) if "all" in args.include else set(args.include)
    canon = _canonical_name(args.name, catalog)
    ltype = _stripped(args.location_type)
    notes: list[str] = _catalog_notes(catalog)
    found = None
    if catalog.trees is not None and canon != REALM and canon not in catalog.domains:
        found = await catalog.trees.find(canon, record=True)
    if found is not None and found.record is not None and "history" not in wanted:
        loc, from_upstream = m.Location.model_validate(found.record), False
    else:
        # history=true answers the plain record plus its history: one request covers both.
        loc, from_upstream = await _location(client, canon, "name", catalog, history="history" in wanted), True
    parent_chain = children_by_type = children = children_page = scanned = None
    from_catalog = not from_upstream
    if wanted & {"hierarchy", "children"}:
        below = await _below(client, catalog, canon, ltype, args.hierarchy_max_depth, found.site if found else None)
        from_upstream = from_upstream or below.from_upstream
        from_catalog = from_catalog or not below.from_upstream
        if "hierarchy" in wanted:
            parent_chain = below.chain
        nodes = below.nodes
        scanned = len(nodes)
        if ltype is not None:
            ltype = canonical_type(ltype, (n.location_type for n in nodes))
            nodes = of_type(nodes, ltype)
            notes.append(f"Children pruned to type {ltype}.")
        children_by_type = dict(sorted(Counter(n.location_type or "" for n in nodes).items()))
        if "children" in wanted:
            chosen = nodes[args.children_offset:args.children_offset + args.children_limit]
            children = [_summary(n) for n in chosen]
            children_page = page(args.children_offset, args.children_limit, len(chosen), len(nodes))
    history, truncated = _history(loc) if "history" in wanted else (None, False)
    if truncated:
        notes.append(f"locationHistory holds the latest {MAX_HISTORY} positions.")
    if found is not None and catalog.trees is not None and catalog.trees.refreshed_at is not None:
        notes.append(f"From the location catalog's stored subtree of {found.site} (refreshed "
                     f"{catalog.trees.refreshed_at:%Y-%m-%d %H:%M} UTC).")
    props = "properties" in wanted
    polygon = loc.location_polygon.model_dump(mode="json") if loc.location_polygon else None
    return GetLocationOutput(
        location_name=loc.location_name, location_description=loc.location_description,
        location_type=loc.location_type, domain_code=loc.domain_code, site_code=loc.site_code,
        location_decimal_latitude=loc.location_decimal_latitude,
        location_decimal_longitude=loc.location_decimal_longitude, location_elevation=loc.location_elevation,
        location_utm_easting=loc.location_utm_easting, location_utm_northing=loc.location_utm_northing,
        location_utm_hemisphere=loc.location_utm_hemisphere, location_utm_zone=loc.location_utm_zone,
        alpha_orientation=loc.alpha_orientation, beta_orientation=loc.beta_orientation,
        gamma_orientation=loc.gamma_orientation, x_offset=loc.x_offset, y_offset=loc.y_offset,
        z_offset=loc.z_offset, offset_location=loc.offset_location if isinstance(loc.offset_location, dict) else None,
        active_periods=[p.to_upstream() for p in loc.active_periods],
        has_polygon=polygon is not None, property_count=len(loc.location_properties),
        location_properties=loc.properties if props else None,
        location_properties_raw=[p.to_upstream() for p in loc.location_properties] if props else None,
        location_polygon=polygon if "polygon" in wanted else None,
        location_parent=loc.location_parent, location_parent_url=loc.location_parent_url,
        parent_chain=parent_chain, children_by_type=children_by_type, children=children,
        children_page=children_page, hierarchy_nodes_scanned=scanned, location_history=history,
        history_truncated=truncated,
        resolved={"name": {"input": args.name, "locationName": canon}}, notes=notes,
        next_steps=_location_steps(loc, children, children_page, args, typed=_needs_rows(canon, catalog)),
        source=Source(origin=_origin(from_upstream, from_catalog), endpoints=[ENDPOINT] if from_upstream else [],
                      api_base_url=cfg.eco.base_url))


def _location_steps(loc: m.Location, children: list[LocationSummary] | None, children_page: Page | None,
                    args: GetLocationInput, *, typed: bool) -> list[NextStep]:
    """`typed`: the name is REALM or a domain, whose children are asked for by type."""
    steps: list[NextStep] = []
    if children:
        steps.extend(_item_steps(children[0])[:1])
    elif children is None and loc.location_type != "CONFIG":
        if typed:
            kind = _stripped(args.location_type) or "SITE"
            steps.append(NextStep(tool="eco_get_location",
                                  arguments={"name": loc.location_name, "include": ["children"], "location_type": kind},
                                  why=f"The {kind} locations under {loc.location_name} (children need a type here)."))
        else:
            steps.append(NextStep(tool="eco_get_location",
                                  arguments={"name": loc.location_name, "include": ["children"]},
                                  why="What this location holds, by type."))
    if (loc.location_type or "").upper() in SENSOR_TYPES and loc.site_code:
        steps.append(NextStep(tool="eco_search_products", arguments={"site": loc.site_code},
                              why=f"Products measured at {loc.site_code}."))
    if children_page and children_page.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_location", arguments={**more, "children_offset": children_page.next_offset},
                              why="The next page of children."))
    return steps


def _origin(from_upstream: bool, from_catalog: bool) -> Literal["catalog", "upstream", "mixed"]:
    if not from_upstream:
        return "catalog"
    return "mixed" if from_catalog else "upstream"


def _history(loc: m.Location) -> tuple[list[HistoryEntry], bool]:
    entries = loc.location_history or []
    return [HistoryEntry(
        current=h.current, start_date=h.location_start_date, end_date=h.location_end_date,
        latitude=h.location_decimal_latitude, longitude=h.location_decimal_longitude, elevation=h.location_elevation,
    ) for h in entries[:MAX_HISTORY]], len(entries) > MAX_HISTORY


REALM_REF = ParentRef(location_name=REALM, location_type="FIELD")


@dataclass
class _Below:
    chain: list[ParentRef]
    nodes: list[Node]
    from_upstream: bool


async def _below(client: UpstreamClient, catalog: LocationCatalog, name: str, ltype: str | None,
                 max_depth: int, site: str | None) -> _Below:
    """The parent chain and the nodes below `name`: from the catalog when it holds them (`site`:
    the stored site holding `name`), else from one (cached) hierarchy=true request."""
    if _needs_rows(name, catalog):
        if ltype is None:
            raise checks.bad("location_type", f"required for {name} with hierarchy or children")
        if catalog.unavailable is not None:
            raise catalog.unavailable
        chain = [] if name == REALM else [REALM_REF]
        key = type_key(ltype)
        if key in ("site", "domain") and (name == REALM or key == "site"):
            return _Below(chain, _catalog_rows(catalog, name, key), False)
        if name == REALM:
            raise EcoError("query_too_large", f"location_type: {ltype} under REALM spans every site",
                           hint="Use eco_find_locations with site_codes, or a domain or site name here.")
        sites = sorted(s.name for s in catalog.sites.values() if s.domain_code == name)
        if catalog.trees is not None and sites and all(s in catalog.trees.sites for s in sites):
            trees = [await catalog.trees.tree(s) for s in sites]
            found = pruned(trees, lambda t: type_key(t) == key, max_depth)
            return _Below(chain, [stored_node(n, d) for n, d in found], False)
        # A domain's tree pruned upstream: one request, never the domain's whole tree.
        tree = await _location(client, name, "name", catalog, hierarchy=True, location_type=neon_type(ltype))
        return _Below(_chain(tree), hierarchy_nodes(tree, max_depth), True)
    if site is not None and catalog.trees is not None:
        stored = await catalog.trees.tree(site)
        return _Below(_stored_chain(catalog, stored, name),
                      [stored_node(n, d) for n, d in stored.below(name, max_depth)], False)
    # A site or anything below: the unpruned subtree (one cached request shared with eco_find_locations).
    tree = await _location(client, name, "name", catalog, hierarchy=True)
    return _Below(_chain(tree), hierarchy_nodes(tree, max_depth), True)


def _chain(loc: m.Location) -> list[ParentRef]:
    out: list[ParentRef] = []
    p = loc.location_parent_hierarchy
    while p is not None:
        out.append(ParentRef(location_name=p.location_name, location_type=p.location_type))
        p = p.location_parent_hierarchy
    return out


def _stored_chain(catalog: LocationCatalog, tree: SiteTree, name: str) -> list[ParentRef]:
    """Parents up to REALM: inside the site from the stored tree, then the site's domain."""
    out = [ParentRef(location_name=n.name, location_type=n.location_type or None) for n in tree.ancestors(name)]
    domain = catalog.domains.get(tree.nodes[tree.site].parent)
    if domain is not None:
        out += [ParentRef(location_name=domain.name, location_type="DOMAIN"), REALM_REF]
    return out


# -- names, the catalog's rows and stored subtrees, the upstream ---------------------------------

def _stripped(location_type: str | None) -> str | None:
    return location_type.strip() if location_type and location_type.strip() else None


async def _catalog(cfg: Any, client: UpstreamClient) -> LocationCatalog:
    """The location catalog; when it cannot be had, an empty one that says why (`unavailable`):
    one named location is NEON's own record and tree, which need no catalog; only REALM and
    the domains (their rows) do, and they raise that error."""
    try:
        return await location_catalog(cfg, client)
    except EcoError as exc:
        if exc.code != "catalog_unavailable":
            raise
        return LocationCatalog(sites={}, domains={}, unavailable=exc)


def _catalog_notes(catalog: LocationCatalog) -> list[str]:
    if catalog.unavailable is None:
        return []
    return [f"The location catalog is unavailable ({catalog.unavailable.message}); answered from the upstream."]


def _needs_rows(name: str, catalog: LocationCatalog) -> bool:
    """REALM or a domain: below them the catalog's rows answer, and a type is required."""
    return name == REALM or name in catalog.domains or (catalog.unavailable is not None and bool(DOMAIN_CODE.match(name)))


def _canonical_name(name: str, catalog: LocationCatalog) -> str:
    """Four-letter site codes and domain codes are upper-cased; every other name is case-sensitive.
    Without the catalog every four-letter name is taken for a site code (NEON's only ones)."""
    text = name.strip()
    if SITE_CODE.match(text) and (text.upper() in catalog.sites or catalog.unavailable is not None):
        return text.upper()
    if DOMAIN_CODE.match(text):
        return text.upper()
    return text


def _site_name(text: str) -> str:
    words = " ".join(text.lower().split())
    return words[:-5] if words.endswith(" neon") else words


async def _site_code(text: str, catalog: LocationCatalog, client: UpstreamClient) -> dict[str, Any]:
    """One site_codes entry as `resolved` echoes it: a four-letter code (any case), or a site's
    name as the location catalog describes it (a trailing " NEON" optional)."""
    code = text.strip().upper()
    if code in catalog.sites or (catalog.unavailable is not None and SITE_CODE.match(code)):
        row = catalog.sites.get(code)
        return {"input": text, "siteCode": code, "siteName": row.description if row else None, "matchedBy": "code"}
    wanted = _site_name(text)
    named = [row for row in catalog.sites.values() if wanted and _site_name(row.description) == wanted]
    if len(named) == 1:
        return {"input": text, "siteCode": named[0].name, "siteName": named[0].description, "matchedBy": "name"}
    raise EcoError("not_found", f"site_codes: no field site {text!r}", details={
        "didYouMean": nearest(text, {row.name: row.description for row in catalog.sites.values()})},
        hint="site_codes takes four-letter site codes or site names; see details.didYouMean.")


# The names below each site whose subtree this process read from the upstream (site code ->
# names; names only, to stay small): a mistyped tower or plot name is suggested from them without
# a request.
_walked_names = memos.by_value("locations.walked_names", max_entries=100)


def _remember_names(tree: m.Location) -> None:
    if (tree.location_type or "").upper() == "SITE":
        _walked_names.put(tree.location_name, tuple(n.name for n in hierarchy_nodes(tree, 12)))


async def _site_names(site: str, catalog: LocationCatalog, client: UpstreamClient) -> dict[str, str]:
    """The names in `site`'s subtree: stored, remembered, else its (cached) hierarchy=true answer."""
    if catalog.trees is not None and site in catalog.trees.sites:
        tree = await catalog.trees.tree(site)
        return {n.name: n.description or "" for n, _ in tree.below(site, 12)}
    known: tuple[str, ...] | None = _walked_names.get(site)
    if known is None:
        try:
            _remember_names(await client.location(site, hierarchy=True))
        except EcoError:
            return {}
        known = _walked_names.get(site)
    return dict.fromkeys(known or (), "")


async def _near_names(name: str, catalog: LocationCatalog, client: UpstreamClient) -> list[str]:
    """Names a location argument accepts, nearest to `name` first: a name starting with a site
    code (HARV_008...) is compared with that site's subtree; any other with the sites and domains
    and the subtrees this process has read (a tower or soil array one character off)."""
    head = name.strip()[:4].upper()
    if head in catalog.sites and name.strip()[4:5] in ("_", "."):
        return nearest(name, await _site_names(head, catalog, client))
    accepted = {c.name: c.description for c in (*catalog.sites.values(), *catalog.domains.values())}
    letters = re.match(r"[A-Za-z]+", name.strip())
    kind = letters.group().upper() if letters is not None and len(letters.group()) >= 3 else None
    if kind is not None:
        # Names of the same kind (TOWER..., SOILAR...), stored or walked: NEON's names do not say
        # their site. Only that kind: a mistyped site code is offered sites, not every plot.
        for site in catalog.sites:
            accepted.update((n, "") for n in (_walked_names.get(site) or ()) if n.startswith(kind))
        if catalog.trees is not None:
            accepted.update(await catalog.trees.names_from(kind))
    return nearest(name, accepted)


async def _unknown_name(field_name: str, name: str, catalog: LocationCatalog, client: UpstreamClient) -> EcoError:
    """not_found, suggesting only names that exist: the upper-cased name when NEON has it (one
    cached request, asked only for a name with lower-case letters), then the nearest names."""
    near = await _near_names(name, catalog, client)
    hint = None
    upper = name.strip().upper()
    if upper != name.strip():
        hint = "Location names are case-sensitive (only site and domain codes are upper-cased)"
        if await _exists(client, catalog, upper):
            near = [upper, *(n for n in near if n != upper)][:5]
            hint += f"; {upper!r} exists."
        else:
            hint += "; see details.didYouMean." if near else "."
    return EcoError("not_found", f"{field_name}: no location named {name!r}",
                    details={"didYouMean": near}, hint=hint)


async def _exists(client: UpstreamClient, catalog: LocationCatalog, name: str) -> bool:
    if name in catalog.sites or name in catalog.domains or name == REALM:
        return True
    if catalog.trees is not None and await catalog.trees.find(name) is not None:
        return True
    try:
        await client.location(name)
    except EcoError:
        return False
    return True


async def _location(client: UpstreamClient, name: str, field_name: str, catalog: LocationCatalog,
                    **kw: Any) -> m.Location:
    try:
        found = await client.location(name, **kw)
        if kw.get("hierarchy") and not kw.get("location_type"):
            _remember_names(found)
        return found
    except EcoError as exc:
        if exc.code == "not_found":
            raise await _unknown_name(field_name, name, catalog, client) from None
        raise


def _catalog_rows(catalog: LocationCatalog, name: str, key: str) -> list[Node]:
    """The SITE ("site") or DOMAIN ("domain") rows under REALM or a domain, by name."""
    rows = catalog.sites if key == "site" else catalog.domains
    picked = sorted((r for r in rows.values() if name == REALM or r.domain_code == name), key=lambda r: r.name)
    depth = 2 if name == REALM and key == "site" else 1  # REALM > domain > site
    return [catalog_node(r, depth) for r in picked]


async def _stored_walk(catalog: LocationCatalog, name: str, max_depth: int) -> tuple[str | None, list[Node]] | None:
    """(type of `name`, the nodes below it) from the stored subtree of the site holding it (a site
    or any node below one), or None when not stored."""
    if catalog.trees is None or name == REALM or name in catalog.domains:
        return None
    found = await catalog.trees.find(name)
    if found is None:
        return None
    tree = await catalog.trees.tree(found.site)
    return tree.nodes[name].location_type or None, [stored_node(n, d) for n, d in tree.below(name, max_depth)]


def _summary(n: Node) -> LocationSummary:
    return LocationSummary(
        location_name=n.name, location_type=n.location_type, location_description=n.description,
        site_code=n.site_code, location_parent=n.parent, depth=n.depth, latitude=n.latitude,
        longitude=n.longitude, distance_km=n.distance_km)


def _item_steps(item: LocationSummary) -> list[NextStep]:
    kind = (item.location_type or "").upper()
    if kind == "SITE":
        return [NextStep(tool="eco_find_locations", arguments={"root": item.location_name},
                         why=f"What {item.location_name} contains (typesAvailable)."),
                NextStep(tool="eco_get_site", arguments={"site": item.location_name},
                         why="Products with data at this site.")]
    if kind == "DOMAIN":
        # Below a domain, children are asked for by type: its sites come from the catalog.
        return [NextStep(tool="eco_get_location", arguments={"name": item.location_name,
                                                             "include": ["hierarchy", "children"],
                                                             "location_type": "SITE"},
                         why=f"{item.location_name}: its sites.")]
    steps = [NextStep(tool="eco_get_location", arguments={"name": item.location_name,
                                                         "include": ["hierarchy", "children"]},
                      why=f"{item.location_name}: parents up to REALM and what it holds.")]
    if kind in SENSOR_TYPES and item.site_code:
        steps.append(NextStep(tool="eco_search_products", arguments={"site": item.site_code},
                              why=f"Products measured at {item.site_code} (match HOR.VER in file names)."))
    return steps


# -- coordinates ---------------------------------------------------------------------------------

Placement = tuple[float | None, float | None, float | None, str | None]  # latitude, longitude, elevation, site
# Coordinates seen in GraphQL answers, per location name, with their expiry (monotonic): the
# upstream client never caches GraphQL, so without these a warm site walk would still ask for
# its page's coordinates on every call.
_placements = memos.by_value("locations.placements", max_entries=100_000)


async def _coordinates(client: UpstreamClient, nodes: list[Node], ttl_s: float | None) -> None:
    """Fill coordinates of `nodes` (at most 1000): remembered ones first (when `ttl_s`), the rest
    from ONE GraphQL findLocations request."""
    now = time.monotonic()
    todo = []
    for n in nodes:
        memo: tuple[float, Placement] | None = _placements.get(n.name) if ttl_s else None
        if memo is not None and memo[0] > now:
            n.latitude, n.longitude, n.elevation, site = memo[1]
            n.site_code, n.placed = n.site_code or site, True
        else:
            todo.append(n)
    if not todo:
        return
    reply = await client.graphql(COORDINATES_QUERY, {"names": [n.name for n in todo]},
                                 model=m.GqlFindLocationsData, kind="detail")
    found = {g.location_name: g for g in reply.find_locations}
    for n in todo:
        n.placed = True
        g = found.get(n.name)
        if g is not None:
            n.latitude, n.longitude, n.elevation = (g.location_decimal_latitude, g.location_decimal_longitude,
                                                    g.location_elevation)
            n.site_code = n.site_code or g.site_code
            if ttl_s:
                _placements.put(n.name, (now + ttl_s, (n.latitude, n.longitude, n.elevation, g.site_code)))
