"""The stored site subtrees (the `subtrees` catalog: LocationNodeRow rows, filled by
catalog.services.location_subtrees) as the location reads walk them.

    stored_trees(cfg, run=None) -> StoredTrees | None     sync: None when nothing may be served
    await trees.tree(site) -> SiteTree                      the site's nodes, pre-order
    await trees.find(name, record=False) -> StoredPlace | None    which stored site holds `name`
    tree.below(name, max_depth) -> [(StoredNode, depth)]    what a hierarchy=true walk of `name` lists
    tree.ancestors(name) -> [StoredNode]                    parents inside the site, nearest first
    pruned(trees, type_key, max_depth) -> [(StoredNode, depth)]   a locationType-pruned domain walk

Served only when the subtrees were built from the configured upstream (as every catalog is,
catalog.status.upstream_mismatch). A site's tree is remembered (memo table
"locations.site_trees") under its subtrees generation, so a warm walk costs one small query (the
state row) and no upstream request; the generation is in the key because the subtrees are
refreshed on their own schedule, not with the catalog index (whose change empties every memo).
A node's record is read when asked for (one indexed query), never kept.

`run` carries the synchronous ORM reads off the event loop: the tools pass their catalog-read
pool (catalog.access.catalog_read); by default asgiref's sync_to_async.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async

from catalog.models import SUBTREES, CatalogState, LocationNodeRow
from catalog.status import upstream_mismatch
from eco_core.config import EcoConfig
from eco_core.memo import memos

Runner = Callable[..., Awaitable[Any]]
MEMO_SITES = 128  # more than NEON has sites (81): a generation's trees all fit, oldest go first


@dataclass(frozen=True)
class StoredNode:
    name: str
    location_type: str
    description: str
    parent: str
    depth: int  # 0: the site
    site_code: str
    latitude: float | None
    longitude: float | None
    elevation: float | None


@dataclass(frozen=True)
class SiteTree:
    site: str
    nodes: dict[str, StoredNode]  # in the upstream's (pre-)order
    children: dict[str, tuple[str, ...]]

    def below(self, name: str, max_depth: int) -> list[tuple[StoredNode, int]]:
        """The nodes under `name` down to `max_depth` levels, pre-order, with their depth below it."""
        out: list[tuple[StoredNode, int]] = []

        def walk(parent: str, depth: int) -> None:
            for child in self.children.get(parent, ()):
                out.append((self.nodes[child], depth))
                if depth < max_depth:
                    walk(child, depth + 1)

        if max_depth >= 1:
            walk(name, 1)
        return out

    def ancestors(self, name: str) -> list[StoredNode]:
        out = []
        node = self.nodes[name]
        while node.depth > 0:
            node = self.nodes[node.parent]
            out.append(node)
        return out

    def topmost(self, key: Callable[[str], bool]) -> list[StoredNode]:
        """The nodes whose type matches with no matching ancestor (what NEON's locationType
        pruning keeps as the tops of the pruned tree), the site itself first."""
        found: list[StoredNode] = []

        def walk(name: str) -> None:
            node = self.nodes[name]
            if key(node.location_type):
                found.append(node)
                return
            for child in self.children.get(name, ()):
                walk(child)

        walk(self.site)
        return found


def pruned(trees: Iterable[SiteTree], key: Callable[[str], bool], max_depth: int) -> list[tuple[StoredNode, int]]:
    """A domain's tree pruned to a type, as `GET /locations/{domain}?hierarchy=true&locationType=`
    answers it: each topmost node of the type at depth 1, with its own subtree below it."""
    out: list[tuple[StoredNode, int]] = []
    for tree in trees:
        for top in tree.topmost(key):
            out.append((top, 1))
            out.extend((n, d + 1) for n, d in tree.below(top.name, max_depth - 1))
    return out


@dataclass(frozen=True)
class StoredPlace:
    site: str
    record: dict[str, Any] | None


# A stored generation is its (version, refresh time): a wiped and rebuilt state restarts versions.
Generation = tuple[int, datetime | None]
# (generation, site) -> SiteTree; generation -> the stored site names (only the current
# generation is ever asked for again).
_trees = memos.by_value("locations.site_trees", max_entries=MEMO_SITES)
_site_sets = memos.by_value("locations.stored_sites", max_entries=1)
# The tables are plain mappings; stored_trees runs on several catalog-read threads at once.
_lock = threading.Lock()


def _load_tree(site: str) -> SiteTree:
    nodes: dict[str, StoredNode] = {}
    children: dict[str, list[str]] = {}
    rows = (LocationNodeRow.objects.filter(site_code=site).order_by("seq")
            .values_list("name", "location_type", "description", "parent", "depth", "latitude", "longitude",
                         "elevation"))
    for name, ltype, desc, parent, depth, lat, lon, elev in rows:
        nodes[name] = StoredNode(name, ltype, desc, parent, depth, site, lat, lon, elev)
        if depth > 0:
            children.setdefault(parent, []).append(name)
    return SiteTree(site, nodes, {k: tuple(v) for k, v in children.items()})


def _find(name: str, record: bool) -> StoredPlace | None:
    fields = ("site_code", "record") if record else ("site_code",)
    row = LocationNodeRow.objects.filter(name=name).values(*fields).first()
    return StoredPlace(row["site_code"], row.get("record")) if row else None


@dataclass(frozen=True)
class StoredTrees:
    generation: Generation
    sites: frozenset[str]
    run: Runner = field(compare=False)

    @property
    def refreshed_at(self) -> datetime | None:
        return self.generation[1]

    async def tree(self, site: str) -> SiteTree:
        key = (self.generation, site)
        with _lock:
            hit: SiteTree | None = _trees.get(key)
        if hit is not None:
            return hit
        tree: SiteTree = await self.run(_load_tree, site)
        with _lock:
            _trees.put(key, tree)
        return tree

    async def names_from(self, prefix: str, *, limit: int = 20000) -> dict[str, str]:
        """Stored names starting with `prefix` (name -> description), at most `limit`: the
        candidates for a mistyped name (families.locations suggests from them)."""
        found: dict[str, str] = await self.run(_names_from, prefix, limit)
        return found

    async def find(self, name: str, *, record: bool = False) -> StoredPlace | None:
        if name in self.sites and not record:
            return StoredPlace(name, None)
        found: StoredPlace | None = await self.run(_find, name, record)
        return found


def _names_from(prefix: str, limit: int) -> dict[str, str]:
    rows = LocationNodeRow.objects.filter(name__startswith=prefix).values_list("name", "description")[:limit]
    return {name: description or "" for name, description in rows}


def _default_run(fn: Callable[..., Any], *args: Any) -> Awaitable[Any]:
    return sync_to_async(fn)(*args)


def stored_trees(cfg: EcoConfig, run: Runner | None = None) -> StoredTrees | None:
    """The subtrees that may be served now, or None (never built, empty, or from another upstream)."""
    state = CatalogState.objects.filter(catalog=SUBTREES).first()
    if state is None or not state.row_count or upstream_mismatch(state.rest_base, state.graphql_url, cfg):
        return None
    generation = (state.version, state.refreshed_at)
    with _lock:
        sites: frozenset[str] | None = _site_sets.get(generation)
    if sites is None:
        sites = frozenset(LocationNodeRow.objects.filter(depth=0).values_list("name", flat=True))
        with _lock:
            _site_sets.put(generation, sites)
    return StoredTrees(generation, sites, run or _default_run)
