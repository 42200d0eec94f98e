"""The flat node lists the location reads filter and page through, whichever side they came from
(an upstream `hierarchy=true` reply, a stored subtree, a SITE or DOMAIN row of the location
catalog), and the rules they are matched by: location types, and distance from a point.

    hierarchy_nodes(loc, max_depth) -> [Node]        the nodes below an upstream hierarchy reply
    stored_node(node, depth), catalog_node(row) -> Node
    type_key(t), neon_type(t), canonical_type(t, seen), of_type(nodes, t)
    within(nodes, latitude, longitude, radius_km) -> [Node]   nearest first
    sites_near(sites, latitude, longitude, reach_km) -> [CatalogLocation]

Pure: no database, no upstream, no wire models (families/locations.py turns nodes into its
answers).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from catalog.location_trees import StoredNode
from catalog.locations import CatalogLocation
from catalog.sites import haversine_km
from upstream import models as m

REALM = "REALM"


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
    # Catalog rows and stored nodes carry whatever coordinates NEON has (none for domains):
    # nothing to look up.
    placed: bool = False


# -- types -----------------------------------------------------------------------------------

def type_key(value: str) -> str:
    """Types match case-insensitively, and SOIL_ARRAY matches NEON's 'SOIL ARRAY'."""
    return " ".join(value.replace("_", " ").lower().split())


def neon_type(value: str) -> str:
    """A type as NEON spells it in a `locationType` parameter (which matches exactly)."""
    key = type_key(value)
    if key.startswith("os plot - "):
        return "OS Plot - " + key.removeprefix("os plot - ")
    return value.strip().upper()


def canonical_type(wanted: str, seen: Iterable[str | None]) -> str:
    """`wanted` as the nodes spell it, when one of them has that type."""
    key = type_key(wanted)
    return next((t for t in seen if t and type_key(t) == key), wanted)


def of_type(nodes: list[Node], location_type: str) -> list[Node]:
    key = type_key(location_type)
    return [n for n in nodes if n.location_type and type_key(n.location_type) == key]


# -- where nodes come from ---------------------------------------------------------------------

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


def hierarchy_nodes(loc: m.Location, max_depth: int) -> list[Node]:
    """The nodes below `loc` down to `max_depth` levels, pre-order (the upstream's order)."""
    out: list[Node] = []
    site = _site_of(loc)

    def walk(children: list[m.ChildHierarchy], parent: str, depth: int) -> None:
        for c in children:
            out.append(Node(c.location_name, c.location_type, c.location_description, parent, depth, site))
            if depth < max_depth:
                walk(c.location_child_hierarchy, c.location_name, depth + 1)

    walk(loc.location_child_hierarchy or [], loc.location_name, 1)
    return out


def catalog_node(c: CatalogLocation, depth: int = 1) -> Node:
    return Node(c.name, c.location_type, c.description or None, c.parent, depth, c.site_code or None,
                c.latitude, c.longitude, c.elevation, placed=True)


def stored_node(n: StoredNode, depth: int) -> Node:
    # The subtree refresh stored whatever coordinates NEON has for it.
    return Node(n.name, n.location_type or None, n.description or None, n.parent, depth, n.site_code,
                n.latitude, n.longitude, n.elevation, placed=True)


# -- distance ----------------------------------------------------------------------------------

def within(nodes: list[Node], latitude: float, longitude: float, radius_km: float) -> list[Node]:
    """The nodes with coordinates within `radius_km` of the point, nearest first (then by name),
    each with its distance set."""
    for n in nodes:
        if n.latitude is not None and n.longitude is not None:
            n.distance_km = round(haversine_km(latitude, longitude, n.latitude, n.longitude), 3)
    near = [n for n in nodes if n.distance_km is not None and n.distance_km <= radius_km]
    near.sort(key=lambda n: (n.distance_km or 0.0, n.name))
    return near


def sites_near(sites: Iterable[CatalogLocation], latitude: float, longitude: float,
               reach_km: float) -> list[CatalogLocation]:
    """The sites whose centre is within `reach_km` of the point."""
    return [s for s in sites if s.latitude is not None and s.longitude is not None
            and haversine_km(latitude, longitude, s.latitude, s.longitude) <= reach_km]
