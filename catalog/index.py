"""The in-memory search index over the persistent catalogs, held per process.

    get_index() -> CatalogIndex     the current index (built on first use)
    peek_index() -> index | None    the current index if no version check is due (no database)
    mark_dirty()                    this process just swapped a catalog: rebuild at next use
    index_at(versions) -> index | None   a held index of older catalog versions (a pinned reader)
    held_versions() -> [versions]   what is held, least recently used first

An index is defined by the catalog versions it was built from. The process holds up to
`cache.max_index_entries` of them in least-recently-used order: the current one, plus the ones a
swap superseded, so a reader that pinned the versions it started on (`index_at`) still reads
that catalog after a swap until its index is forgotten (then None: read `get_index()` again).
With 1 only the current index is held. A held index whose versions come back (a database
restored to an older state) is served again without a rebuild. Today's tools hold their index
object for the whole call, so none of them needs `index_at`; what the setting bounds for them is
how many superseded indexes the process keeps in memory.

Freshness without a query per call: `get_index()` compares the catalog versions in the
database (one small query on CatalogState) at most once per CHECK_INTERVAL_S; when any version
moved, whichever process swapped it, the index of the new versions is built from the database
(or taken from the held ones). Between checks every call is served from memory. A refresh in
this process calls `mark_dirty()`, so its own searches see the new catalog at once. When the
check finds the database unreachable (catalog.outage), the current index is served as it is and
the database asked again after CHECK_INTERVAL_S; with no index yet, the error is raised.

Must be called from synchronous code (the ORM): async callers go through
`asgiref.sync.sync_to_async` or a thread. The catalog data of a built index (products, sites,
releases, their postings) is never changed: a new catalog version builds a new index object, so
a reader holding the old one is never disturbed by a rebuild. Two things do change in place: a
check that finds the same versions replaces `info` (refresh times, sources, row counts) with the
newer state, so ages stay current without a rebuild, and the memo of query-word matches grows.
"""

from __future__ import annotations

import bisect
import gc
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from catalog.models import CatalogState, LocationRow, ProductRow, ProductSiteAvailabilityRow, ReleaseRow, SiteRow
from catalog.months import month_from_index
from catalog.outage import DATABASE_DOWN
from eco_core.config import get_config
from eco_core.memo import memos
from eco_core.memory import release_freed

CHECK_INTERVAL_S = 1.0
WORD = re.compile(r"[a-z0-9]+")
RELEASE_TAG = re.compile(r"RELEASE-(\d{4})")
STOPWORDS = frozenset("a an and are as at by for from in into is of on or the to with".split())
# How much a hit in each field counts towards a product's score.
FIELD_WEIGHTS = {"name": 3.0, "keywords": 2.0, "themes": 1.5, "description": 1.0}

Interval = tuple[int, int]


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def merge(intervals: list[Interval]) -> tuple[Interval, ...]:
    if not intervals:
        return ()
    ordered = sorted(intervals)
    out: list[Interval] = []
    ca, cb = ordered[0]
    for a, b in ordered[1:]:
        if a <= cb + 1:
            if b > cb:
                cb = b
        else:
            out.append((ca, cb))
            ca, cb = a, b
    out.append((ca, cb))
    return tuple(out)


def parse_ranges(ranges: list[str]) -> tuple[Interval, ...]:
    """Stored intervals ("YYYY-MM/YYYY-MM", sorted and disjoint) as month-index pairs."""
    out = []
    for r in ranges:
        a = int(r[:4]) * 12 + int(r[5:7]) - 1
        b = int(r[8:12]) * 12 + int(r[13:15]) - 1 if len(r) > 7 else a
        out.append((a, b))
    return tuple(out)


def overlaps(intervals: tuple[Interval, ...], lo: int, hi: int) -> bool:
    return any(a <= hi and b >= lo for a, b in intervals)


@dataclass(frozen=True, slots=True)
class Cell:
    """One product at one site: merged month intervals overall and per release (PROVISIONAL too).

    `by_release` is the current view: each month under the newest release holding it. `in_release`
    puts each month under every release that holds it (what a release filter asks about)."""

    product_code: str
    site_code: str
    all: tuple[Interval, ...]
    by_release: dict[str, tuple[Interval, ...]]
    first_month: str
    last_month: str
    month_count: int
    in_release: dict[str, tuple[Interval, ...]] = field(default_factory=dict)

    @property
    def ranges(self) -> dict[str, list[str]]:
        """`by_release` as the catalog stores it: "YYYY-MM/YYYY-MM" texts (catalog.months.to_ranges),
        made when asked rather than held: held, the texts and their lists were a sixth of a warm index."""
        return {rel: [f"{month_from_index(a)}/{month_from_index(b)}" for a, b in ivs]
                for rel, ivs in self.by_release.items()}


@dataclass(frozen=True)
class ProductEntry:
    code: str
    base_code: str
    code_long: str
    code_presentation: str
    name: str
    description: str
    status: str
    category: str
    team: str
    team_abbr: str
    publication_format_type: str
    level: int
    themes: tuple[str, ...]
    keywords: tuple[str, ...]
    has_expanded: bool
    latest_release: str | None
    releases: tuple[dict, ...]
    specs_count: int
    site_count: int
    first_month: str | None
    last_month: str | None
    all: tuple[Interval, ...]
    by_release: dict[str, tuple[Interval, ...]]
    sites: frozenset[str]
    sites_by_release: dict[str, frozenset[str]]
    cells: dict[str, Cell]
    # Every release holding each month (see Cell.in_release), and the sites with months in each.
    in_release: dict[str, tuple[Interval, ...]] = field(default_factory=dict)
    sites_in_release: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def month_range(self) -> str | None:
        return f"{self.first_month}/{self.last_month}" if self.first_month else None

    @property
    def release_tags(self) -> tuple[str, ...]:
        return tuple(r["release"] for r in self.releases)


@dataclass(frozen=True)
class SiteEntry:
    code: str
    name: str
    description: str
    site_type: str
    state_code: str
    state_name: str
    domain_code: str
    domain_name: str
    latitude: float
    longitude: float
    elevation: float | None
    utm_easting: float | None
    utm_northing: float | None
    utm_zone: int | None
    utm_hemisphere: str | None
    deims_id: str
    releases: tuple[str, ...]
    product_count: int
    products: frozenset[str]
    tokens: frozenset[str]


@dataclass(frozen=True)
class ReleaseEntry:
    tag: str
    uuid: str
    generation_date: datetime | None
    product_count: int
    artifacts: tuple[dict, ...]
    product_dois: dict[str, str]
    # As the release record names them; the product catalog may lack a withdrawn product.
    product_names: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CatalogInfo:
    version: int
    source: str | None
    refreshed_at: datetime | None
    row_count: int
    # The upstream the catalog was built from (see catalog.status.upstream_mismatch).
    rest_base: str = ""
    graphql_url: str = ""


@dataclass(frozen=True)
class DocumentEntry:
    """A document (spec) as the product catalog knows it: every product whose specs list it."""
    spec_number: str
    products: tuple[str, ...]
    description: str | None
    type: str | None


@dataclass
class CatalogIndex:
    versions: dict[str, int]
    info: dict[str, CatalogInfo]
    products: list[ProductEntry]
    by_code: dict[str, ProductEntry]
    sites: list[SiteEntry]
    site_by_code: dict[str, SiteEntry]
    releases: list[ReleaseEntry]
    domains: dict[str, str]
    # token -> {product position: best field weight}; `field_of` says which field gave it.
    postings: dict[str, dict[int, float]]
    field_of: dict[tuple[str, int], str]
    vocab: list[str]
    _token_cache: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    built_at: float = field(default_factory=time.monotonic)
    # spec number -> the document's entry
    documents: dict[str, DocumentEntry] = field(default_factory=dict)

    def product_tokens_for(self, word: str) -> list[tuple[str, float]]:
        """Vocabulary tokens a query word matches, with a quality in (0, 1]: exact 1.0, singular or
        plural 0.9; failing those, tokens it begins (0.7), and failing that, for words of 4+
        letters, small typos (<= 0.6)."""
        cached = self._token_cache.get(word)
        if cached is not None:
            return cached
        out: list[tuple[str, float]] = []
        if word in self.postings:
            out.append((word, 1.0))
        # Singular and plural count as the word itself, almost.
        for variant in (word[:-1] if word.endswith("s") and len(word) > 3 else None, word + "s"):
            if variant and variant in self.postings:
                out.append((variant, 0.9))
        if not out and len(word) >= 3:
            i = bisect.bisect_left(self.vocab, word)
            while i < len(self.vocab) and self.vocab[i].startswith(word):
                out.append((self.vocab[i], 0.7))
                i += 1
        if not out and len(word) >= 4:
            out = _fuzzy(word, self.vocab)
        if len(self._token_cache) < 20000:
            self._token_cache[word] = out
        return out

    @property
    def age_seconds(self) -> dict[str, int | None]:
        return {c: self.age_of(c) for c in self.info}

    def age_of(self, catalog: str) -> int | None:
        """Whole seconds since `catalog` was refreshed. Refresh times are aware, so UTC's `now`
        gives the same difference as the local one without reading the local time zone (that
        read was a fifth of a kept search's own work)."""
        info = self.info.get(catalog)
        if info is None or info.refreshed_at is None:
            return None
        return int((datetime.now(UTC) - info.refreshed_at).total_seconds())


def _fuzzy(word: str, vocab: list[str]) -> list[tuple[str, float]]:
    from rapidfuzz import fuzz, process

    # One edit in four letters is 75; in five or more letters >= 80.
    cutoff = 75 if len(word) == 4 else 80
    hits = process.extract(word, vocab, scorer=fuzz.ratio, score_cutoff=cutoff, limit=8)
    return [(tok, 0.6 * score / 100) for tok, score, _ in hits if abs(len(tok) - len(word)) <= 2]


# -- building ------------------------------------------------------------------------------

class _Shared:
    """One object for each equal value the index holds, so equal ones are stored once. The
    cells of a catalog repeat the same few thousand month intervals, interval runs and month
    texts hundreds of thousands of times (the simulated catalog: 442,749 interval
    references, 5,787 distinct): sharing them is most of the index's memory. Values are
    immutable (ints, str, tuples of them), so sharing cannot be observed; lists and dicts stay
    one per owner. Lives for one build only."""

    def __init__(self) -> None:
        self._values: dict[object, object] = {}

    def intervals(self, ivs: tuple[Interval, ...]) -> tuple[Interval, ...]:
        values = self._values
        run = values.get(ivs)
        if run is None:
            run = tuple(values.setdefault(iv, iv) for iv in ivs)  # type: ignore[misc]
            values[run] = run
        return run  # type: ignore[return-value]

    def by_key(self, runs: dict[str, tuple[Interval, ...]]) -> dict[str, tuple[Interval, ...]]:
        return {sys.intern(k): self.intervals(v) for k, v in runs.items()}

    def text(self, value: str) -> str:
        return self._values.setdefault(value, value)  # type: ignore[return-value]

    def codes(self, values: set[str]) -> frozenset[str]:
        frozen = frozenset(values)
        return self._values.setdefault(frozen, frozen)  # type: ignore[return-value]


def _cell(product_code: str, site_code: str, ranges: dict[str, list[str]], first: str, last: str,
          count: int, shared: _Shared | None = None) -> Cell:
    shared = shared or _Shared()
    by_release = shared.by_key({rel: parse_ranges(rs) for rel, rs in ranges.items()})
    return Cell(
        product_code=product_code,
        site_code=site_code,
        all=shared.intervals(merge([iv for ivs in by_release.values() for iv in ivs])),
        by_release=by_release,
        first_month=shared.text(first),
        last_month=shared.text(last),
        month_count=count,
    )


def _release_year(tag: str) -> int | None:
    m = RELEASE_TAG.fullmatch(tag)
    return int(m.group(1)) if m else None


def release_cutoffs(cells: list[Cell], tags: set[str]) -> dict[str, int]:
    """The last month (index) each release holds. The current view shows a month only under its
    newest release, so an older release's last month is seldom seen: it is what is seen under
    that tag or, releases being annual (RELEASE-YYYY), a newer release's last month less twelve
    months a year between them, whichever is later."""
    seen: dict[str, int] = {}
    for c in cells:
        for rel, ivs in c.by_release.items():
            if ivs and _release_year(rel) is not None and ivs[-1][1] > seen.get(rel, -1):
                seen[rel] = ivs[-1][1]
    out: dict[str, int] = {}
    for tag in tags | set(seen):
        year = _release_year(tag)
        if year is None:
            continue
        guesses = [last - 12 * (uy - year) for u, last in seen.items()
                   if (uy := _release_year(u)) is not None and uy >= year]
        if guesses:
            out[tag] = max(guesses)
    return out


def _in_release(cell: Cell, cutoffs: dict[str, int], tags: frozenset[str] | None) -> dict[str, tuple[Interval, ...]]:
    """Each month of the cell under every release holding it: its newest release (as listed) and
    each older one whose last month is not before it. Provisional months are in no release;
    `tags`, when known, are the product's releases (a release without the product holds none of it)."""
    out: dict[str, list[Interval]] = {}
    for newest, ivs in cell.by_release.items():
        year = _release_year(newest)
        if year is None:
            continue
        out.setdefault(newest, []).extend(ivs)
        for tag, last in cutoffs.items():
            ty = _release_year(tag)
            if ty is not None and ty < year:
                clipped = [(a, min(b, last)) for a, b in ivs if a <= last]
                if clipped:
                    out.setdefault(tag, []).extend(clipped)
    return {tag: merge(ivs) for tag, ivs in out.items() if tags is None or tag in tags}


def build_index(versions: dict[str, int], info: dict[str, CatalogInfo]) -> CatalogIndex:
    shared = _Shared()
    cells_by_product: dict[str, dict[str, Cell]] = {}
    rows = ProductSiteAvailabilityRow.objects.values_list(
        "product_code", "site_code", "by_release", "first_month", "last_month", "month_count")
    for row in rows.iterator(chunk_size=2000):
        code, site = sys.intern(row[0]), sys.intern(row[1])
        cells_by_product.setdefault(code, {})[site] = _cell(code, site, row[2], row[3], row[4], row[5], shared=shared)
    release_rows = list(ReleaseRow.objects.all().order_by("tag"))
    cutoffs = release_cutoffs([c for cs in cells_by_product.values() for c in cs.values()],
                              {r.tag for r in release_rows})
    products: list[ProductEntry] = []
    product_rows = list(ProductRow.objects.all().order_by("product_code"))
    for p in product_rows:
        product_tags = frozenset(r["release"] for r in p.releases) or None
        cells = {site: replace(c, in_release=shared.by_key(_in_release(c, cutoffs, product_tags)))
                 for site, c in cells_by_product.get(p.product_code, {}).items()}
        releases: dict[str, list[Interval]] = {}
        sites_by_release: dict[str, set[str]] = {}
        held: dict[str, list[Interval]] = {}
        sites_in_release: dict[str, set[str]] = {}
        for c in cells.values():
            for rel, ivs in c.by_release.items():
                releases.setdefault(rel, []).extend(ivs)
                sites_by_release.setdefault(rel, set()).add(c.site_code)
            for rel, ivs in c.in_release.items():
                held.setdefault(rel, []).extend(ivs)
                sites_in_release.setdefault(rel, set()).add(c.site_code)
        products.append(
            ProductEntry(
                code=p.product_code,
                base_code=p.product_code.rsplit(".", 1)[0],
                code_long=p.product_code_long,
                code_presentation=p.product_code_presentation,
                name=p.product_name,
                description=p.product_description,
                status=p.product_status,
                category=p.product_category,
                team=p.product_science_team,
                team_abbr=p.product_science_team_abbr,
                publication_format_type=p.product_publication_format_type,
                level=p.level,
                themes=tuple(p.themes),
                keywords=tuple(p.keywords),
                has_expanded=p.product_has_expanded,
                latest_release=p.latest_release or None,
                releases=tuple(p.releases),
                specs_count=p.specs_count,
                site_count=p.site_count,
                first_month=p.first_month or None,
                last_month=p.last_month or None,
                all=shared.intervals(merge([iv for c in cells.values() for iv in c.all])),
                by_release=shared.by_key({rel: merge(ivs) for rel, ivs in releases.items()}),
                sites=frozenset(cells),
                sites_by_release={rel: shared.codes(s) for rel, s in sites_by_release.items()},
                cells=cells,
                in_release=shared.by_key({rel: merge(ivs) for rel, ivs in held.items()}),
                sites_in_release={rel: shared.codes(s) for rel, s in sites_in_release.items()},
            )
        )
    postings: dict[str, dict[int, float]] = {}
    field_of: dict[tuple[str, int], str] = {}
    for pos, p in enumerate(products):
        fields = {
            "name": words(p.name),
            "keywords": [w for k in p.keywords for w in words(k)],
            "themes": [w for t in p.themes for w in words(t)],
            "description": words(p.description),
        }
        for fname, toks in fields.items():
            weight = FIELD_WEIGHTS[fname]
            for tok in toks:
                slot = postings.setdefault(tok, {})
                if weight > slot.get(pos, 0.0):
                    slot[pos] = weight
                    field_of[(tok, pos)] = fname

    locations = {loc.name: loc for loc in LocationRow.objects.all()}
    domains = {loc.name: loc.description for loc in locations.values() if loc.location_type == "DOMAIN"}
    site_products: dict[str, set[str]] = {}
    for p in products:
        for s in p.sites:
            site_products.setdefault(s, set()).add(p.code)
    sites = []
    for s in SiteRow.objects.all().order_by("site_code"):
        loc = locations.get(s.site_code)
        domains.setdefault(s.domain_code, s.domain_name)
        sites.append(
            SiteEntry(
                code=s.site_code,
                name=s.site_name,
                description=s.site_description,
                site_type=s.site_type,
                state_code=s.state_code,
                state_name=s.state_name,
                domain_code=s.domain_code,
                domain_name=s.domain_name,
                latitude=s.latitude,
                longitude=s.longitude,
                elevation=s.elevation if s.elevation is not None else (loc.elevation if loc else None),
                utm_easting=loc.utm_easting if loc else None,
                utm_northing=loc.utm_northing if loc else None,
                utm_zone=loc.utm_zone if loc else None,
                utm_hemisphere=(loc.utm_hemisphere or None) if loc else None,
                deims_id=s.deims_id,
                releases=tuple(s.releases),
                product_count=s.product_count,
                products=frozenset(site_products.get(s.site_code, ())),
                tokens=frozenset(
                    [s.site_code.lower(), s.state_code.lower(), s.domain_code.lower(), *words(s.site_name), *words(s.state_name), *words(s.domain_name)]
                ),
            )
        )
    release_entries = [
        ReleaseEntry(r.tag, r.uuid, r.generation_date, r.product_count, tuple(r.artifacts), dict(r.product_dois),
                     dict(r.product_names))
        for r in release_rows
    ]
    return CatalogIndex(
        versions=versions,
        info=info,
        products=products,
        by_code={p.code: p for p in products},
        sites=sites,
        site_by_code={s.code: s for s in sites},
        releases=release_entries,
        domains=domains,
        postings=postings,
        field_of=field_of,
        vocab=sorted(postings),
        documents=_documents(product_rows),
    )


def _documents(rows: list[ProductRow]) -> dict[str, DocumentEntry]:
    owners: dict[str, list[str]] = {}
    first: dict[str, dict] = {}
    for p in rows:
        for spec in p.specs or ():
            owners.setdefault(spec["specNumber"], []).append(p.product_code)
            known = first.setdefault(spec["specNumber"], spec)
            if not known.get("specDescription") and spec.get("specDescription"):
                first[spec["specNumber"]] = spec
    return {n: DocumentEntry(n, tuple(sorted(set(codes))), first[n].get("specDescription") or None,
                             first[n].get("specType") or None) for n, codes in owners.items()}


# -- the per-process holder ----------------------------------------------------------------

VersionsKey = tuple[tuple[str, int], ...]

_lock = threading.Lock()
# Indexes by the catalog versions they were built from, least recently used first, at most
# cache.max_index_entries; `_index` (what get_index() answers) is always one of them.
_held: OrderedDict[VersionsKey, CatalogIndex] = OrderedDict()
_index: CatalogIndex | None = None
_checked_at = 0.0
_dirty = True
_generation = 0


def _key(versions: Mapping[str, int]) -> VersionsKey:
    return tuple(sorted(versions.items()))


def mark_dirty() -> None:
    global _dirty, _generation
    _dirty = True
    _generation += 1


def generation() -> int:
    """Moves whenever this process swapped a catalog or forgot the index: a short-lived cache of
    catalog state (eco_ping's) compares it to know it is stale at once."""
    return _generation


def _read_versions() -> tuple[dict[str, int], dict[str, CatalogInfo]]:
    info = {
        s.catalog: CatalogInfo(s.version, s.source or None, s.refreshed_at, s.row_count, s.rest_base, s.graphql_url)
        for s in CatalogState.objects.all()
    }
    return {c: i.version for c, i in info.items()}, info


def _hold(key: VersionsKey, idx: CatalogIndex) -> None:
    """Make `idx` the most recently used entry, then forget the least recently used ones beyond
    cache.max_index_entries (read at each insertion, so a new configuration applies at once).
    The entry just made current is the last one, so it is never the one forgotten."""
    _held[key] = idx
    _held.move_to_end(key)
    limit = get_config().cache.max_index_entries
    while len(_held) > limit:
        _held.popitem(last=False)


def _new_index(versions: dict[str, int], info: dict[str, CatalogInfo]) -> CatalogIndex:
    """The index of these catalogs, loaded or built, moved out of the cyclic collector's reach
    (gc.freeze(), here, once per new index). A warm index is a great many objects that live until
    the next catalog swap, and every full collection walked all of them with the event loop
    stopped, the largest part of a catalog call's tail latency under load. Frozen objects sit in the permanent
    generation, which collections skip; an index holds no reference cycles (dropping one leaves
    nothing for the collector), so a frozen index that is superseded is still freed by reference
    counting. The young generations are collected first, so no young cyclic garbage is frozen
    with it.

    A new process takes the index of these catalogs that the last build left in the data folder
    (catalog.index_snapshot), far cheaper than building it again. Its load runs with the collector
    off: with it on, young passes walked the containers the load makes again and again, and the
    index is frozen before the collector is back, so no pass walks it even once."""
    from catalog import index_snapshot

    gc.collect(1)
    collecting = gc.isenabled()
    gc.disable()
    try:
        idx = index_snapshot.load(versions, info, CatalogIndex)
        if idx is not None:
            gc.freeze()
            release_freed()
            return idx
    finally:
        if collecting:
            gc.enable()
    idx = build_index(versions, info)
    index_snapshot.save(idx)
    gc.collect(1)  # the build's young garbage
    gc.freeze()
    # The scratch of this build, and of the catalog build that preceded it, goes back.
    release_freed()
    return idx


def get_index(*, clock=time.monotonic) -> CatalogIndex:
    """The index of the catalog versions now in the database (checked at most once a
    CHECK_INTERVAL_S, or at once after mark_dirty); built when no held index has those versions."""
    global _index, _checked_at, _dirty
    current = _index
    if current is not None and not _dirty and clock() - _checked_at < CHECK_INTERVAL_S:
        return current
    with _lock:
        if _index is not None and not _dirty and clock() - _checked_at < CHECK_INTERVAL_S:
            return _index
        # The check counts as done only once its index is installed: marking it done before a
        # build let every other caller take the superseded index meanwhile (catalogs looking
        # missing, so each of them started a rebuild of its own). A mark_dirty() that arrives
        # during the build moves the generation and keeps the next call checking.
        seen = _generation
        try:
            versions, info = _read_versions()
        except DATABASE_DOWN:
            if _index is None:
                raise
            # The catalog this index holds is what the database held at the last check: better
            # answered than refused. Asked again after the interval.
            _checked_at = clock()
            return _index
        key = _key(versions)
        idx = _held.get(key)
        if idx is None:
            idx = _new_index(versions, info)
        else:
            idx.info = info  # same catalogs, newer state: see the module docstring
        _hold(key, idx)
        if idx is not _index:
            # Every remembered answer was made from the index it replaces (eco_core.memo).
            memos.drop_all()
        _index = idx
        _checked_at = clock()
        if _generation == seen:
            _dirty = False
        return idx


def index_at(versions: Mapping[str, int]) -> CatalogIndex | None:
    """The held index built from exactly these catalog versions (a reader pinned to the versions
    it started on), marked as just used; None once it has been forgotten. Reads no database."""
    with _lock:
        key = _key(versions)
        idx = _held.get(key)
        if idx is not None:
            _held.move_to_end(key)
        return idx


def held_versions() -> list[dict[str, int]]:
    """The catalog versions of every index this process holds, least recently used first: what
    cache.max_index_entries bounds."""
    with _lock:
        return [dict(key) for key in _held]


def peek_index(*, clock=time.monotonic) -> CatalogIndex | None:
    """The index when `get_index()` would return it without reading the database, else None.
    Safe on the event loop: an async caller that gets an index skips a thread hop, which costs
    more than the call's own work for the cheapest catalog reads."""
    current = _index
    if current is not None and not _dirty and clock() - _checked_at < CHECK_INTERVAL_S:
        return current
    return None


def reset() -> None:
    """Forget every index (tests; a process that switched databases)."""
    global _index, _checked_at, _dirty, _generation
    with _lock:
        _held.clear()
        _index, _checked_at, _dirty = None, 0.0, True
        memos.drop_all()
        _generation += 1
