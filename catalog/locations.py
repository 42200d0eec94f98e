"""The locations family's reads (eco_find_locations, eco_get_location): the SITE and DOMAIN rows
of the location catalog, every site's subtree as the subtree refresh stored it (catalog.location_trees),
and, where the catalog does not hold what is asked, the upstream: a site subtree from one cached
`hierarchy=true` request, coordinates for many locations from one GraphQL `findLocations` request.

    location_catalog(run=None) -> LocationCatalog  synchronous: SITE and DOMAIN rows, stored subtrees
    await find_locations(client=, catalog=, ..., coordinates_ttl_s=None) -> FoundLocations
    await location_detail(client=, catalog=, name=, include=, ...) -> LocationAnswer

Upstream cost: REALM or a domain with SITE or DOMAIN is answered from the catalog (no request).
When the catalog holds the site's subtree (`catalog.trees`), a walk of the site or of any node in
it, eco_get_location of such a node (its record, hierarchy and children) and a domain pruned to a
type (when every site of the domain is stored) cost no request either. Otherwise (subtrees not
refreshed yet, built from another upstream, or a name they do not hold) a walk is one
`hierarchy=true` request, cached by the upstream client for `cache.ttl_s.locations` (shared with
eco_get_location's hierarchy and children of that node); coordinates of a page, or of a proximity
search's candidates, are one GraphQL request (then remembered for `coordinates_ttl_s`).

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
Bad arguments raise EcoError("invalid_argument") naming the field; unknown names `not_found`
with catalog suggestions.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog import checks
from catalog.location_trees import Runner, SiteTree, StoredNode, StoredTrees, pruned, stored_trees
from catalog.models import LocationRow
from catalog.sites import haversine_km
from eco_core.config import get_config
from eco_core.errors import EcoError
from eco_core.wire import Answer, Page, WireModel, page
from upstream import models as m

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

REALM = "REALM"
SECTIONS = ("properties", "hierarchy", "history", "children", "polygon")
# NEON's findLocations takes at most 1000 names per request: a proximity search needs every
# candidate's coordinates, so more candidates than that would cost several requests.
PROXIMITY_MAX_CANDIDATES = 1000
# Sites whose centre is this much beyond radius_km may still hold plots inside the circle.
SITE_REACH_KM = 25.0
MAX_HISTORY = 100
SITE_CODE = re.compile(r"^[A-Za-z]{4}$")
DOMAIN_CODE = re.compile(r"^[Dd](0[1-9]|1\d|20)$")
# GraphQL variables keep the names out of the query text (no escaping to get wrong).
COORDINATES_QUERY = (
    "query EcoLocationCoordinates($names: [String!]!) { findLocations(query: {locationNames: $names}) "
    "{ locationName locationType siteCode locationDecimalLatitude locationDecimalLongitude locationElevation } }"
)


# -- wire types ----------------------------------------------------------------------------

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


class LocationRecord(WireModel):
    """eco_get_location's answer without the envelope."""

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


# -- the catalog ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CatalogLocation:
    name: str
    location_type: str
    description: str
    domain_code: str
    site_code: str
    parent: str
    latitude: float | None
    longitude: float | None
    elevation: float | None


@dataclass(frozen=True)
class LocationCatalog:
    sites: dict[str, CatalogLocation]
    domains: dict[str, CatalogLocation]
    trees: StoredTrees | None = None  # the stored site subtrees, when they may be served

    def suggestions(self, text: str) -> list[str]:
        from rapidfuzz import fuzz, process

        choices = {c.name: f"{c.name} {c.description}" for c in (*self.sites.values(), *self.domains.values())}
        # A mistyped code is nearest to a code; a name's words to a description.
        codes = process.extract(text.upper(), {k: k for k in choices}, scorer=fuzz.ratio, score_cutoff=70, limit=5)
        found = [k for _, _, k in codes]
        found += [k for _, _, k in process.extract(text, choices, scorer=fuzz.WRatio, score_cutoff=60, limit=5)
                  if k not in found]
        return [choices[k] for k in found[:5]]


def location_catalog(run: Runner | None = None) -> LocationCatalog:
    """The SITE and DOMAIN rows the refresh stores (about 100 rows) and the stored subtrees, whose
    later reads go through `run` (see catalog.location_trees)."""
    rows = [CatalogLocation(r.name, r.location_type, r.description, r.domain_code, r.site_code, r.parent,
                            r.latitude, r.longitude, r.elevation) for r in LocationRow.objects.all()]
    if not rows:
        raise EcoError("catalog_unavailable", "the locations catalog has not been built yet")
    return LocationCatalog(sites={r.name: r for r in rows if r.location_type == "SITE"},
                           domains={r.name: r for r in rows if r.location_type == "DOMAIN"},
                           trees=stored_trees(get_config(), run))


# -- names and types -----------------------------------------------------------------------

def type_key(value: str) -> str:
    """Types match case-insensitively, and SOIL_ARRAY matches NEON's 'SOIL ARRAY'."""
    return " ".join(value.replace("_", " ").lower().split())


def neon_type(value: str) -> str:
    """A type as NEON spells it in a `locationType` parameter (which matches exactly)."""
    key = type_key(value)
    if key.startswith("os plot - "):
        return "OS Plot - " + key.removeprefix("os plot - ")
    return value.strip().upper()


def canonical_name(name: str, catalog: LocationCatalog) -> str:
    """Four-letter site codes and domain codes are upper-cased; every other name is case-sensitive."""
    text = name.strip()
    if SITE_CODE.match(text) and text.upper() in catalog.sites:
        return text.upper()
    if DOMAIN_CODE.match(text):
        return text.upper()
    return text


def unknown_name(field_name: str, name: str, catalog: LocationCatalog) -> EcoError:
    hint = None
    if name != name.upper() and not SITE_CODE.match(name):
        hint = f"Location names are case-sensitive (only site and domain codes are upper-cased); check {name.upper()!r}."
    return EcoError("not_found", f"{field_name}: no location named {name!r}",
                    details={"didYouMean": catalog.suggestions(name) or None}, hint=hint)


async def _location(client: UpstreamClient, name: str, field_name: str, catalog: LocationCatalog,
                    **kw: Any) -> m.Location:
    try:
        return await client.location(name, **kw)
    except EcoError as exc:
        if exc.code == "not_found":
            raise unknown_name(field_name, name, catalog) from None
        raise


# -- the tree ------------------------------------------------------------------------------

@dataclass
class Node:
    name: str
    location_type: str | None
    description: str | None
    parent: str
    depth: int
    site_code: str | None
    latitude: float | None = None
    longitude: float | None = None
    elevation: float | None = None
    distance_km: float | None = None
    # Catalog rows carry whatever coordinates NEON has (none for domains): nothing to look up.
    placed: bool = False

    def summary(self) -> LocationSummary:
        return LocationSummary(
            location_name=self.name, location_type=self.location_type, location_description=self.description,
            site_code=self.site_code, location_parent=self.parent, depth=self.depth, latitude=self.latitude,
            longitude=self.longitude, distance_km=self.distance_km)


def _flatten(children: list[m.ChildHierarchy], parent: str, depth: int, max_depth: int, site: str | None,
             out: list[Node]) -> None:
    for c in children:
        out.append(Node(c.location_name, c.location_type, c.location_description, parent, depth, site))
        if depth < max_depth:
            _flatten(c.location_child_hierarchy, c.location_name, depth + 1, max_depth, site, out)


def _site_of(loc: m.Location) -> str | None:
    """The site a hierarchy reply belongs to (hierarchy=true drops siteCode): itself or an ancestor."""
    if (loc.location_type or "").upper() == "SITE":
        return loc.location_name
    p = loc.location_parent_hierarchy
    while p is not None:
        if (p.location_type or "").upper() == "SITE":
            return p.location_name
        p = p.location_parent_hierarchy
    return loc.site_code


def subtree(loc: m.Location, max_depth: int) -> list[Node]:
    out: list[Node] = []
    _flatten(loc.location_child_hierarchy or [], loc.location_name, 1, max_depth, _site_of(loc), out)
    return out


def _canonical_type(wanted: str, seen: list[str | None]) -> str:
    key = type_key(wanted)
    return next((t for t in seen if t and type_key(t) == key), wanted)


Placement = tuple[float | None, float | None, float | None, str | None]
# Coordinates seen in GraphQL answers, per location name: the upstream client never caches
# GraphQL, so without this a warm site walk would still ask for its page's coordinates on every
# call. Kept `cache.ttl_s.locations` seconds, like the REST location answers.
_placements: dict[str, tuple[float, Placement]] = {}
MAX_PLACEMENTS = 100_000


def forget_placements() -> None:
    """Drop every remembered coordinate (tests that count requests start from none)."""
    _placements.clear()


async def _coordinates(client: UpstreamClient, nodes: list[Node], ttl_s: float | None) -> None:
    """Fill coordinates of `nodes` (at most 1000): remembered ones first, the rest from ONE
    GraphQL findLocations request."""
    now = time.monotonic()
    todo = []
    for n in nodes:
        memo = _placements.get(n.name) if ttl_s else None
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
    if ttl_s and len(_placements) + len(todo) > MAX_PLACEMENTS:
        _placements.clear()
    for n in todo:
        n.placed = True
        g = found.get(n.name)
        if g is not None:
            n.latitude, n.longitude, n.elevation = (g.location_decimal_latitude, g.location_decimal_longitude,
                                                    g.location_elevation)
            n.site_code = n.site_code or g.site_code
            if ttl_s:
                _placements[n.name] = (now + ttl_s, (n.latitude, n.longitude, n.elevation, g.site_code))


def _catalog_node(c: CatalogLocation) -> Node:
    return Node(c.name, c.location_type, c.description or None, c.parent, 1, c.site_code or None,
                c.latitude, c.longitude, c.elevation, placed=True)


def _stored_node(n: StoredNode, depth: int) -> Node:
    # The refresh stored whatever coordinates NEON has for it: nothing left to look up.
    return Node(n.name, n.location_type or None, n.description or None, n.parent, depth, n.site_code,
                n.latitude, n.longitude, n.elevation, placed=True)


async def _stored_tree(catalog: LocationCatalog, name: str) -> SiteTree | None:
    """The stored tree of the site holding `name` (a site or any node below one), if stored."""
    if catalog.trees is None or name == REALM or name in catalog.domains:
        return None
    found = await catalog.trees.find(name)
    return await catalog.trees.tree(found.site) if found else None


async def _stored_walk(catalog: LocationCatalog, name: str, max_depth: int) -> tuple[str | None, list[Node]] | None:
    """(type of `name`, the nodes below it) from the stored subtrees, or None when not stored."""
    tree = await _stored_tree(catalog, name)
    if tree is None:
        return None
    return tree.nodes[name].location_type or None, [_stored_node(n, d) for n, d in tree.below(name, max_depth)]


# -- eco_find_locations ----------------------------------------------------------------------

@dataclass
class FoundLocations:
    roots: list[LocationRoot]
    location_type: str | None
    types_available: dict[str, int] | None
    hierarchy_nodes_scanned: int
    items: list[LocationSummary]
    page: Page
    notes: list[str] = field(default_factory=list)
    resolved: dict[str, Any] = field(default_factory=dict)
    from_upstream: bool = False


def _check_find(*, root: str | None, site_codes: list[str] | None, latitude: float | None,
                longitude: float | None, radius_km: float, max_depth: int, limit: int, offset: int,
                max_roots: int) -> None:
    if root is not None and site_codes is not None:
        raise checks.bad("site_codes", "give root or site_codes, not both")
    if site_codes is not None and not 1 <= len(site_codes) <= max_roots:
        raise checks.bad("site_codes", f"give 1 to {max_roots} site codes, got {len(site_codes)}")
    if (latitude is None) != (longitude is None):
        raise checks.bad("longitude" if latitude is not None else "latitude", "latitude and longitude go together")
    if not 0 < radius_km <= 5000:
        raise checks.bad("radius_km", "must be > 0 and <= 5000")
    if not 1 <= max_depth <= 12:
        raise checks.bad("max_depth", "must be from 1 to 12")
    checks.paging(limit, offset, 200)


def _walk_roots(catalog: LocationCatalog, name: str, ltype: str | None, latitude: float | None,
                longitude: float | None, radius_km: float, max_roots: int) -> list[str]:
    """The sites to walk for a type below REALM or a domain (not SITE/DOMAIN: those are catalog rows)."""
    sites = [s for s in catalog.sites.values() if name == REALM or s.domain_code == name]
    if latitude is not None and longitude is not None:
        sites = [s for s in sites if s.latitude is not None and s.longitude is not None
                 and haversine_km(latitude, longitude, s.latitude, s.longitude) <= radius_km + SITE_REACH_KM]
    if len(sites) > max_roots:
        raise EcoError(
            "query_too_large",
            f"location_type: {ltype} under {name} means walking {len(sites)} sites (at most {max_roots})",
            details={"sites": len(sites), "maxSites": max_roots},
            hint="Give site_codes (up to 20), or latitude/longitude with a smaller radius_km.")
    return sorted(s.name for s in sites)


async def find_locations(
    *, client: UpstreamClient, catalog: LocationCatalog, root: str | None = None, site_codes: list[str] | None = None,
    location_type: str | None = None, query: str | None = None, latitude: float | None = None,
    longitude: float | None = None, radius_km: float = 50.0, include_coordinates: bool = True, max_depth: int = 6,
    limit: int = 50, offset: int = 0, max_roots: int = 20, coordinates_ttl_s: float | None = None,
) -> FoundLocations:
    _check_find(root=root, site_codes=site_codes, latitude=latitude, longitude=longitude, radius_km=radius_km,
                max_depth=max_depth, limit=limit, offset=offset, max_roots=max_roots)
    ltype = location_type.strip() if location_type and location_type.strip() else None
    notes: list[str] = []
    resolved: dict[str, Any] = {}
    roots: list[LocationRoot] = []
    nodes: list[Node] = []
    walk: list[str] = []
    scanned = 0
    if site_codes is not None:
        for code in site_codes:
            if code.strip().upper() not in catalog.sites:
                raise unknown_name("site_codes", code, catalog)
        walk = list(dict.fromkeys(c.strip().upper() for c in site_codes))
    else:
        name = canonical_name(root or REALM, catalog)
        resolved["root"] = {"input": root or None, "locationName": name}
        if name == REALM or name in catalog.domains:
            if ltype is None:
                raise checks.bad("location_type", f"required under {name} (for example SITE, TOWER, 'OS Plot - mam')")
            key = type_key(ltype)
            if key in ("site", "domain"):
                rows = catalog.sites if key == "site" else catalog.domains
                picked = [r for r in rows.values() if name == REALM or r.domain_code == name]
                nodes = [_catalog_node(r) for r in sorted(picked, key=lambda r: r.name)]
                if name == REALM and key == "site":
                    for n in nodes:
                        n.depth = 2  # REALM > domain > site
                scanned = len(nodes)
                roots.append(LocationRoot(location_name=name, location_type="FIELD" if name == REALM else "DOMAIN",
                                          from_catalog=True, nodes_scanned=scanned))
            else:
                walk = _walk_roots(catalog, name, ltype, latitude, longitude, radius_km, max_roots)
                notes.append(f"Walked {len(walk)} site(s) under {name}.")
        else:
            walk = [name]
    fetched: list[str] = []
    if walk:
        field_name = "site_codes" if site_codes is not None else "root"
        stored = dict(zip(walk, await asyncio.gather(*(_stored_walk(catalog, w, max_depth) for w in walk)),
                          strict=True))
        fetched = [w for w in walk if stored[w] is None]
        trees = dict(zip(fetched, await asyncio.gather(
            *(_location(client, w, field_name, catalog, hierarchy=True) for w in fetched)), strict=True))
        for w in walk:
            hit = stored[w]
            if hit is not None:
                kind, found = hit
                name_found, from_catalog = w, True
            else:
                tree = trees[w]
                kind, found, name_found, from_catalog = tree.location_type, subtree(tree, max_depth), \
                    tree.location_name, False
            nodes.extend(found)
            scanned += len(found)
            roots.append(LocationRoot(location_name=name_found, location_type=kind, from_catalog=from_catalog,
                                      nodes_scanned=len(found)))
    types_available = None
    if ltype is None:
        types_available = dict(sorted(Counter(n.location_type or "" for n in nodes).items()))
    else:
        ltype = _canonical_type(ltype, [n.location_type for n in nodes])
        key = type_key(ltype)
        nodes = [n for n in nodes if n.location_type and type_key(n.location_type) == key]
    if query:
        q = query.strip().lower()
        nodes = [n for n in nodes if q in n.name.lower() or q in (n.description or "").lower()]
    looked_up = False
    if latitude is not None and longitude is not None:
        need = [n for n in nodes if not n.placed]
        if len(need) > PROXIMITY_MAX_CANDIDATES:
            raise EcoError(
                "query_too_large",
                f"location_type: {len(need)} locations match, more than a proximity search scans "
                f"({PROXIMITY_MAX_CANDIDATES})", details={"locations": len(need), "max": PROXIMITY_MAX_CANDIDATES},
                hint="Narrow with location_type, query, site_codes or max_depth.")
        await _coordinates(client, need, coordinates_ttl_s)
        looked_up = bool(need)
        for n in nodes:
            if n.latitude is not None and n.longitude is not None:
                n.distance_km = round(haversine_km(latitude, longitude, n.latitude, n.longitude), 3)
        nodes = [n for n in nodes if n.distance_km is not None and n.distance_km <= radius_km]
        nodes.sort(key=lambda n: (n.distance_km or 0.0, n.name))
        notes.append(f"Locations within {radius_km:g} km of ({latitude}, {longitude}), nearest first.")
    chosen = nodes[offset:offset + limit]
    if include_coordinates and not looked_up:
        missing = [n for n in chosen if not n.placed]
        try:
            await _coordinates(client, missing, coordinates_ttl_s)
            looked_up = bool(missing)
        except EcoError as exc:
            if exc.code not in ("upstream_error", "upstream_unavailable", "graphql_error", "rate_limited"):
                raise
            notes.append(f"Coordinates left out: the batched GraphQL lookup failed ({exc.code}).")
    return FoundLocations(
        roots=roots, location_type=ltype, types_available=types_available, hierarchy_nodes_scanned=scanned,
        items=[n.summary() for n in chosen], page=page(offset, limit, len(chosen), len(nodes)), notes=notes,
        resolved=resolved, from_upstream=bool(fetched) or looked_up)


# -- eco_get_location ------------------------------------------------------------------------

def _chain(loc: m.Location) -> list[ParentRef]:
    out: list[ParentRef] = []
    p = loc.location_parent_hierarchy
    while p is not None:
        out.append(ParentRef(location_name=p.location_name, location_type=p.location_type))
        p = p.location_parent_hierarchy
    return out


def _history(loc: m.Location) -> tuple[list[HistoryEntry], bool]:
    entries = loc.location_history or []
    return [HistoryEntry(
        current=h.current, start_date=h.location_start_date, end_date=h.location_end_date,
        latitude=h.location_decimal_latitude, longitude=h.location_decimal_longitude, elevation=h.location_elevation,
    ) for h in entries[:MAX_HISTORY]], len(entries) > MAX_HISTORY


@dataclass
class _Below:
    chain: list[ParentRef]
    nodes: list[Node]
    from_upstream: bool


REALM_REF = ParentRef(location_name=REALM, location_type="FIELD")


def _stored_chain(catalog: LocationCatalog, tree: SiteTree, name: str) -> list[ParentRef]:
    """Parents up to REALM: inside the site from the stored tree, then the site's domain."""
    out = [ParentRef(location_name=n.name, location_type=n.location_type or None) for n in tree.ancestors(name)]
    domain = catalog.domains.get(tree.nodes[tree.site].parent)
    if domain is not None:
        out += [ParentRef(location_name=domain.name, location_type="DOMAIN"), REALM_REF]
    return out


async def _below(client: UpstreamClient, catalog: LocationCatalog, name: str, ltype: str | None,
                 max_depth: int, site: str | None) -> _Below:
    """The parent chain and the nodes below `name`: from the catalog when it holds them (`site`:
    the stored site holding `name`), else from one (cached) hierarchy=true request."""
    if name == REALM or name in catalog.domains:
        if ltype is None:
            raise checks.bad("location_type", f"required for {name} with hierarchy or children")
        chain = [] if name == REALM else [REALM_REF]
        key = type_key(ltype)
        if key in ("site", "domain") and (name == REALM or key == "site"):
            rows = catalog.sites if key == "site" else catalog.domains
            picked = [r for r in rows.values() if name == REALM or r.domain_code == name]
            nodes = [_catalog_node(r) for r in sorted(picked, key=lambda r: r.name)]
            for n in nodes:
                n.depth = 2 if name == REALM and key == "site" else 1
            return _Below(chain, nodes, False)
        if name == REALM:
            raise EcoError("query_too_large", f"location_type: {ltype} under REALM spans every site",
                           hint="Use eco_find_locations with site_codes, or a domain or site name here.")
        sites = sorted(s.name for s in catalog.sites.values() if s.domain_code == name)
        if catalog.trees is not None and sites and all(s in catalog.trees.sites for s in sites):
            trees = [await catalog.trees.tree(s) for s in sites]
            found = pruned(trees, lambda t: type_key(t) == key, max_depth)
            return _Below(chain, [_stored_node(n, d) for n, d in found], False)
        # A domain's tree pruned upstream: one request, never the domain's whole tree.
        tree = await _location(client, name, "name", catalog, hierarchy=True, location_type=neon_type(ltype))
        return _Below(_chain(tree), subtree(tree, max_depth), True)
    if site is not None and catalog.trees is not None:
        stored = await catalog.trees.tree(site)
        return _Below(_stored_chain(catalog, stored, name),
                      [_stored_node(n, d) for n, d in stored.below(name, max_depth)], False)
    # A site or anything below: the unpruned subtree (one cached request shared with eco_find_locations).
    tree = await _location(client, name, "name", catalog, hierarchy=True)
    return _Below(_chain(tree), subtree(tree, max_depth), True)


@dataclass(frozen=True)
class LocationAnswer(Answer[LocationRecord]):
    # Whether any part came from the catalog's stored subtrees (with from_upstream: "mixed").
    from_catalog: bool = False


async def location_detail(
    *, client: UpstreamClient, catalog: LocationCatalog, name: str, include: list[str],
    location_type: str | None = None, children_limit: int = 50, children_offset: int = 0,
    hierarchy_max_depth: int = 3,
) -> LocationAnswer:
    if not name.strip():
        raise checks.bad("name", "must not be empty")
    for section in include:
        if section not in (*SECTIONS, "all"):
            raise checks.bad("include", f"unknown section {section!r}; valid: {', '.join((*SECTIONS, 'all'))}")
    if not 1 <= children_limit <= 500:
        raise checks.bad("children_limit", "must be from 1 to 500")
    if children_offset < 0:
        raise checks.bad("children_offset", "must be >= 0")
    if not 1 <= hierarchy_max_depth <= 12:
        raise checks.bad("hierarchy_max_depth", "must be from 1 to 12")
    wanted = set(SECTIONS) if "all" in include else set(include or ["properties"])
    canon = canonical_name(name, catalog)
    resolved: dict[str, Any] = {"name": {"input": name, "locationName": canon}}
    ltype = location_type.strip() if location_type and location_type.strip() else None
    notes: list[str] = []
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
        below = await _below(client, catalog, canon, ltype, hierarchy_max_depth, found.site if found else None)
        from_upstream = from_upstream or below.from_upstream
        from_catalog = from_catalog or not below.from_upstream
        if "hierarchy" in wanted:
            parent_chain = below.chain
        nodes = below.nodes
        scanned = len(nodes)
        if ltype is not None:
            ltype = _canonical_type(ltype, [n.location_type for n in nodes])
            nodes = [n for n in nodes if n.location_type and type_key(n.location_type) == type_key(ltype)]
            notes.append(f"Children pruned to type {ltype}.")
        children_by_type = dict(sorted(Counter(n.location_type or "" for n in nodes).items()))
        if "children" in wanted:
            chosen = nodes[children_offset:children_offset + children_limit]
            children = [n.summary() for n in chosen]
            children_page = page(children_offset, children_limit, len(chosen), len(nodes))
    history, truncated = _history(loc) if "history" in wanted else (None, False)
    if truncated:
        notes.append(f"locationHistory holds the latest {MAX_HISTORY} positions.")
    props = "properties" in wanted
    polygon = loc.location_polygon.model_dump(mode="json") if loc.location_polygon else None
    offset_loc = loc.offset_location if isinstance(loc.offset_location, dict) else None
    record = LocationRecord(
        location_name=loc.location_name, location_description=loc.location_description,
        location_type=loc.location_type, domain_code=loc.domain_code, site_code=loc.site_code,
        location_decimal_latitude=loc.location_decimal_latitude,
        location_decimal_longitude=loc.location_decimal_longitude, location_elevation=loc.location_elevation,
        location_utm_easting=loc.location_utm_easting, location_utm_northing=loc.location_utm_northing,
        location_utm_hemisphere=loc.location_utm_hemisphere, location_utm_zone=loc.location_utm_zone,
        alpha_orientation=loc.alpha_orientation, beta_orientation=loc.beta_orientation,
        gamma_orientation=loc.gamma_orientation, x_offset=loc.x_offset, y_offset=loc.y_offset,
        z_offset=loc.z_offset, offset_location=offset_loc,
        active_periods=[p.to_upstream() for p in loc.active_periods],
        has_polygon=polygon is not None, property_count=len(loc.location_properties),
        location_properties=loc.properties if props else None,
        location_properties_raw=[p.to_upstream() for p in loc.location_properties] if props else None,
        location_polygon=polygon if "polygon" in wanted else None,
        location_parent=loc.location_parent, location_parent_url=loc.location_parent_url,
        parent_chain=parent_chain, children_by_type=children_by_type, children=children,
        children_page=children_page, hierarchy_nodes_scanned=scanned, location_history=history,
        history_truncated=truncated,
    )
    if found is not None and catalog.trees is not None and catalog.trees.refreshed_at is not None:
        notes.append(f"From the location catalog's stored subtree of {found.site} (refreshed "
                     f"{catalog.trees.refreshed_at:%Y-%m-%d %H:%M} UTC).")
    return LocationAnswer(record, resolved=resolved, notes=notes, from_upstream=from_upstream,
                          from_catalog=from_catalog)
