"""The sites family: eco_search_sites and eco_get_site. The field sites searched over the in-memory
catalog index (no request; elevations on request from the SITE location records), and one site's
record: its products with month ranges, releases, description and location.

`product` accepts a code or a name and `release` a RELEASE-YYYY tag or latest (catalog.resolve).
Facets count domains, states and site types over the whole filtered set (not the page).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog import availability as av
from catalog import checks, resolve
from catalog.access import catalog_index
from catalog.checks import DOMAIN_PATTERN
from catalog.index import STOPWORDS, CatalogIndex, SiteEntry, words
from catalog.search_common import Found, KeptSearches
from catalog.sites import haversine_km
from catalog.suggest import nearest
from catalog.text import clip
from eco_core.errors import EcoError
from eco_core.memo import memos
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from upstream.context import waiting_at_most

if TYPE_CHECKING:
    from upstream import models as upstream_models
    from upstream.client import UpstreamClient

FIELD_SITES = "https://www.neonscience.org/field-sites"
SECTIONS = ("products", "releases", "description", "location")
# Upstream failures after which elevations, or a site's products, come from the catalog instead (with a note).
CATALOG_FALLBACK = ("upstream_error", "upstream_unavailable", "rate_limited")

# Elevation and UTM easting, northing, zone, hemisphere.
Placement = tuple[float | None, float | None, float | None, int | None, str | None]
_NOWHERE: Placement = (None, None, None, None, None)


def _absent_if_none(value: Any) -> bool:
    return value is None


# -- eco_search_sites --------------------------------------------------------------------------

class Utm(WireModel):
    easting: float | None
    northing: float | None
    zone: int | None
    hemisphere: str | None


class SiteSummary(WireModel):
    site_code: str
    site_name: str
    site_type: str
    state_code: str
    state_name: str
    domain_code: str
    domain_name: str
    site_latitude: float | None
    site_longitude: float | None
    product_count: int
    score: float
    matched_on: list[str]
    # Present only when asked for and known: three nulls on every item of every plain search were
    # bytes paid per call on the wire and in the SDK, for nothing.
    distance_km: float | None = Field(None, exclude_if=_absent_if_none,
                                      description="Proximity search only.")
    elevation: float | None = Field(None, exclude_if=_absent_if_none,
                                    description="Metres; with include_elevation.")
    utm: Utm | None = Field(None, exclude_if=_absent_if_none, description="With include_elevation.")


class SearchSitesInput(ToolInput):
    query: str | None = Field(None, max_length=300, description="Code, name words, state or domain.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN)
    state_code: str | None = Field(None, pattern=r"^[A-Za-z]{2}$")
    site_type: Literal["CORE", "GRADIENT"] | None = None
    product: str | None = Field(None, max_length=300, description="Sites with its data.")
    release: str | None = Field(None, max_length=64)
    latitude: float | None = Field(None, ge=-90, le=90)
    longitude: float | None = Field(None, ge=-180, le=180)
    radius_km: float = Field(100.0, gt=0, le=5000, description="Around latitude/longitude.")
    include_elevation: bool = Field(False, description="Adds elevation and UTM.")
    limit: DefaultLimit = Field(50, ge=1, le=100)
    offset: int = Field(0, ge=0)


class SearchSitesOutput(Envelope):
    items: list[SiteSummary]
    page: Page
    facets: dict[str, dict[str, int]] = Field(description="Counts per domain, state, siteType.")
    did_you_mean: list[str] | None
    index_source: Literal["graphql", "rest"] | None
    index_age_seconds: int | None


async def search_sites(args: SearchSitesInput, call: CallContext) -> SearchSitesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    # In memory, on the loop: see eco_search_products.
    found = find_sites(idx, args).page_of(args.offset, args.limit)
    hits: list[SiteHit] = found["items"]
    notes: list[str] = []
    source = Source(origin="catalog", api_base_url=cfg.eco.base_url)
    if args.include_elevation and hits:
        items, asked = await _with_elevations(call.client, hits, notes, cfg.eco.fallback_wait_s)
        if asked:
            source = Source(origin="mixed", endpoints=["/locations/sites"], api_base_url=cfg.eco.base_url)
    else:
        items = [h.summary() for h in hits]
    if args.latitude is not None:
        notes.append(f"Sites within {args.radius_km:g} km of ({args.latitude}, {args.longitude}), nearest first.")
    resolved = found["resolved"]
    product = (resolved.get("product") or {}).get("productCode")
    info = idx.info.get("sites")
    pg: Page = found["page"]
    return SearchSitesOutput(
        items=items, page=pg, facets=found["facets"], did_you_mean=found["did_you_mean"],
        index_source=info.source if info and info.source in ("graphql", "rest") else None,
        index_age_seconds=idx.age_of("sites"), resolved=resolved, notes=notes,
        next_steps=_search_steps(args, items, pg, product), source=source)


def _search_steps(args: SearchSitesInput, items: list[SiteSummary], pg: Page, product: str | None) -> list[NextStep]:
    steps: list[NextStep] = []
    if items:
        top = items[0].site_code
        if product:
            steps.append(NextStep(tool="eco_get_availability", arguments={"product": product, "site": top},
                                  why=f"Months of {product} at {top}."))
        steps.append(NextStep(tool="eco_get_site", arguments={"site": top}, why=f"Products with data at {top}."))
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_search_sites", arguments={**more, "offset": pg.next_offset},
                              why="The next page of sites."))
    return steps


@dataclass
class SiteHit:
    site: SiteEntry
    score: float
    matched_on: list[str]
    distance_km: float | None = None
    # Its item without placement, made once: a hit is kept with its search, so a repeated search
    # or its next page reuses the validated item. Never changed once made.
    _plain: SiteSummary | None = field(default=None, repr=False, compare=False)

    def summary(self, placement: Placement | None = None) -> SiteSummary:
        """The hit as a search result item; `placement` (elevation, UTM) only when asked for."""
        if placement is None and self._plain is not None:
            return self._plain
        s = self.site
        item = SiteSummary(
            site_code=s.code, site_name=s.name, site_type=s.site_type, state_code=s.state_code,
            state_name=s.state_name, domain_code=s.domain_code, domain_name=s.domain_name,
            site_latitude=s.latitude, site_longitude=s.longitude, product_count=s.product_count,
            score=self.score, matched_on=self.matched_on, distance_km=self.distance_km,
        )
        if placement is not None:
            elev, east, north, zone, hemi = placement
            item.elevation = elev
            item.utm = Utm(easting=east, northing=north, zone=zone, hemisphere=hemi) if east is not None else None
        else:
            self._plain = item
        return item


# A built index never changes, so a search's matches are a function of its filters and the index:
# each call re-ran the scan of every site, the words' fuzzy pass over the vocabulary and the
# facets, most of the tool's own work.
kept_searches: KeptSearches[SiteHit] = KeptSearches("sites.searches", max_entries=256)


def find_sites(idx: CatalogIndex, args: SearchSitesInput) -> Found[SiteHit]:
    """Every match of the search's filters over `idx`, whatever page is asked (the limit and
    offset are not part of a search): kept per index and filters. Synchronous, no request."""
    if (args.latitude is None) != (args.longitude is None):
        raise checks.bad("latitude" if args.latitude is None else "longitude", "latitude and longitude go together")
    checks.built(idx, "sites")
    domain = args.domain_code.upper() if args.domain_code is not None else None
    state = args.state_code.upper() if args.state_code is not None else None
    key = (args.query, domain, state, args.site_type, args.product, args.release, args.latitude, args.longitude,
           args.radius_km)
    return kept_searches.found(idx, key, lambda: _search(idx, args, domain, state))


def _search(idx: CatalogIndex, args: SearchSitesInput, domain: str | None, state: str | None) -> Found[SiteHit]:
    resolved: dict[str, dict[str, Any]] = {}
    prod = None
    if args.product is not None:
        rp = resolve.resolve_product(args.product, index=idx)
        prod = idx.by_code[rp.code]
        resolved["product"] = rp.echo()
    rel = None
    if args.release is not None:
        rr = resolve.resolve_release(args.release, index=idx)
        rel = rr.tag
        resolved["release"] = rr.echo()
    query = args.query
    qwords = [w for w in words(query or "") if w not in STOPWORDS] if query else []
    per_word = [_words_of(idx).matches(w) for w in qwords]
    stype, latitude, longitude = args.site_type, args.latitude, args.longitude


    def kept(s: SiteEntry) -> bool:
        """Whether the filters other than the query text and the distance keep `s`."""
        if (domain and s.domain_code != domain) or (state and s.state_code != state) or (stype and s.site_type != stype):
            return False
        if prod is not None:
            return s.code in (prod.sites_in_release.get(rel, ()) if rel is not None else prod.sites)
        return rel is None or rel in s.releases

    def near(s: SiteEntry) -> float | None:
        """The distance to the search's point, or None without one; inf outside radius_km."""
        if latitude is None or longitude is None:  # both or neither (find_sites)
            return None
        dist = haversine_km(latitude, longitude, s.latitude, s.longitude)
        return float("inf") if dist > args.radius_km else dist

    hits: list[SiteHit] = []
    # Query words name their candidates (the sites every word matches): only they are filtered.
    positions = sorted(set(per_word[0]).intersection(*per_word[1:])) if per_word else range(len(idx.sites))
    for pos in positions:
        s = idx.sites[pos]
        if not kept(s):
            continue
        score, fields = 0.0, set()
        if per_word:
            found = [m[pos] for m in per_word]
            score = sum(m[0] for m in found)
            fields = {m[1] for m in found}
        dist = near(s)
        if dist is not None and dist == float("inf"):
            continue
        hits.append(SiteHit(s, round(score, 3), sorted(fields), round(dist, 1) if dist is not None else None))
    if latitude is not None:
        hits.sort(key=lambda h: (h.distance_km, h.site.code))
    elif qwords:
        hits.sort(key=lambda h: (-h.score, h.site.code))
    did_you_mean = None
    if not hits and query:
        # Site codes the same search keeps: fed back as the query, each finds its site.
        did_you_mean = nearest(query, {s.code: s.name for s in idx.sites if kept(s) and near(s) != float("inf")})
    return Found(hits=hits, facets=_facets(hits), did_you_mean=did_you_mean, resolved=resolved)


def _facets(hits: list[SiteHit]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {"domains": {}, "states": {}, "siteTypes": {}}
    for h in hits:
        for key, value in (("domains", h.site.domain_code), ("states", h.site.state_code),
                           ("siteTypes", h.site.site_type)):
            out[key][value] = out[key].get(value, 0) + 1
    return out


WordMatch = tuple[float, str]


@dataclass(frozen=True)
class _SiteWords:
    """Where each query word can match, for one index's sites: built once per index, so a word
    is looked up (token table, a bisect over the sorted vocabulary, one fuzzy pass over it in
    rapidfuzz) instead of being compared with every token of every site."""

    by_code: dict[str, int]
    by_token: dict[str, tuple[int, ...]]
    name_words: tuple[frozenset[str], ...]
    state_words: tuple[frozenset[str], ...]
    vocab: tuple[str, ...]  # sorted

    @classmethod
    def of(cls, sites: list[SiteEntry] | tuple[SiteEntry, ...]) -> _SiteWords:
        by_token: dict[str, list[int]] = {}
        for pos, site in enumerate(sites):
            for t in site.tokens:
                by_token.setdefault(t, []).append(pos)
        return cls(
            by_code={site.code.lower(): pos for pos, site in enumerate(sites)},
            by_token={t: tuple(ps) for t, ps in by_token.items()},
            name_words=tuple(frozenset(words(site.name)) for site in sites),
            state_words=tuple(frozenset((site.state_code.lower(), *words(site.state_name))) for site in sites),
            vocab=tuple(sorted(by_token)),
        )

    def matches(self, w: str) -> dict[int, WordMatch]:
        """Site position → (score, field) of the best way `w` matches that site: its code, one of
        its tokens (from its name, state or domain), a token it begins (3+ letters), a token it
        nearly is (5+ letters, ratio 80)."""
        out: dict[int, WordMatch] = {}
        code = self.by_code.get(w)
        if code is not None:
            out[code] = (10.0, "siteCode")
        for pos in self.by_token.get(w, ()):
            if pos not in out:
                out[pos] = ((3.0, "siteName") if w in self.name_words[pos]
                            else (2.0, "state") if w in self.state_words[pos] else (1.5, "domain"))
        if len(w) >= 3:
            at = bisect.bisect_left(self.vocab, w)
            while at < len(self.vocab) and self.vocab[at].startswith(w):
                for pos in self.by_token[self.vocab[at]]:
                    out.setdefault(pos, (1.0, "siteName"))
                at += 1
        if len(w) >= 5:
            from rapidfuzz import fuzz, process

            for token, _, _ in process.extract(w, self.vocab, scorer=fuzz.ratio, processor=None,
                                               score_cutoff=80, limit=None):
                for pos in self.by_token[token]:
                    out.setdefault(pos, (0.6, "siteName"))
        return out


# The word tables of an index (a few indexes may be read at once while one replaces another).
_word_tables = memos.by_identity("sites.word_tables", max_entries=4)


def _words_of(idx: CatalogIndex) -> _SiteWords:
    held: _SiteWords | None = _word_tables.get(idx)
    if held is None:
        held = _SiteWords.of(idx.sites)
        _word_tables.put(idx, value=held)
    return held


def _failed(endpoint: str, exc: EcoError, wait_s: float) -> str:
    """Why a live read gave way to the catalog, for the answer's note."""
    details = exc.details or {}
    if details.get("reason") == "deadline":
        # The call's own deadline ends the wait when it comes first: name the limit that did.
        limit = details.get("deadlineSeconds", wait_s)
        setting = "eco.fallback_wait_s" if limit == wait_s else "eco.call_deadline_s"
        return f"{endpoint} was not answered within {limit:g} s ({setting})"
    return f"{endpoint} failed ({exc.code})"


async def _with_elevations(client: UpstreamClient, hits: list[SiteHit], notes: list[str],
                           wait_s: float) -> tuple[list[SiteSummary], bool]:
    """The hits as items with elevation and UTM from the SITE location records (one request for
    all sites, cached per `cache.ttl_s.locations`), and whether the upstream answered; when it
    fails or takes longer than `wait_s`, from the catalog, with a note that says so."""
    wanted = {h.site.code for h in hits}
    try:
        found: dict[str, Placement] = {}
        with waiting_at_most(wait_s):
            sites = await client.location_sites()
        for loc in sites:
            code = loc.site_code or loc.location_name
            if code in wanted and (loc.location_type or "SITE").upper() == "SITE":
                found[code] = (loc.location_elevation, loc.location_utm_easting, loc.location_utm_northing,
                               loc.location_utm_zone, loc.location_utm_hemisphere)
    except EcoError as exc:
        if exc.code not in CATALOG_FALLBACK:
            raise
        notes.append(f"Elevation and UTM come from the cached catalog: {_failed('GET /locations/sites', exc, wait_s)}.")
        return [h.summary((h.site.elevation, h.site.utm_easting, h.site.utm_northing, h.site.utm_zone,
                           h.site.utm_hemisphere)) for h in hits], False
    return [h.summary(found.get(h.site.code, _NOWHERE)) for h in hits], True


# -- eco_get_site ------------------------------------------------------------------------------

SiteSection = Literal["products", "releases", "description", "location", "all"]


class SiteUrls(WireModel):
    api: str
    portal: str


class SiteReleaseInfo(WireModel):
    release: str
    generation_date: str | None
    url: str | None


class SiteProduct(WireModel):
    product_code: str
    product_name: str | None
    month_count: int
    provisional_month_count: int
    first_month: str | None
    last_month: str | None
    ranges: list[str]
    by_release: dict[str, list[str]] = Field(description="Month ranges.")


class ActivePeriod(WireModel):
    activated_date: str | None
    deactivated_date: str | None


class SiteLocation(WireModel):
    location_name: str
    location_description: str | None
    location_type: str | None
    latitude: float | None
    longitude: float | None
    elevation: float | None
    utm_easting: float | None
    utm_northing: float | None
    utm_zone: int | None
    utm_hemisphere: str | None
    properties: dict[str, str | int | float | bool | None]
    active_periods: list[ActivePeriod]
    parent: str | None
    child_count: int


class GetSiteInput(ToolInput):
    site: str = Field(min_length=1, max_length=200)
    release: str | None = Field(None, max_length=64)
    include: list[SiteSection] = Field(
        # A plain default (pydantic copies it per instance) so the inputSchema shows it.
        ["products"], max_length=5)
    products_query: str | None = Field(None, max_length=200, description="Code or title contains this.")
    products_limit: int = Field(100, ge=1, le=300)
    products_offset: int = Field(0, ge=0)


class GetSiteOutput(Envelope):
    site_code: str
    site_name: str
    site_description: str | None
    site_type: str
    site_latitude: float | None
    site_longitude: float | None
    state_code: str
    state_name: str
    domain_code: str
    domain_name: str
    deims_id: str | None
    product_count: int
    latest_release: str | None
    urls: SiteUrls
    releases: list[SiteReleaseInfo] | None
    data_products: list[SiteProduct] | None
    data_products_page: Page | None
    location: SiteLocation | None


# A site's products: product code -> (its title, the months of data there).
Cells = dict[str, tuple[str | None, av.Cell]]


async def get_site(args: GetSiteInput, call: CallContext) -> GetSiteOutput:
    cfg, client = call.cfg, call.client
    idx = await catalog_index(cfg, client)
    rs = resolve.resolve_site(args.site, index=idx)
    code = rs.code
    resolved: dict[str, Any] = {"site": rs.echo()}
    wanted = set(SECTIONS) if "all" in args.include else set(args.include)
    notes: list[str] = []
    tag = None
    rec: upstream_models.Site | None
    if args.release is not None:
        rr = resolve.resolve_release(args.release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
        rec = await client.site(code, release=tag)
        notes.append(f"The site as published in {tag}.")
    else:
        # The site's own record, as the catalog's product count (eco_search_sites) was built from:
        # its products and release links. The product catalog's site lists can disagree with it.
        try:
            with waiting_at_most(cfg.eco.fallback_wait_s):
                rec = await client.site(code)
        except EcoError as exc:
            if exc.code not in CATALOG_FALLBACK:
                raise
            rec = None
            notes.append(f"Products and releases come from the cached catalog: "
                         f"{_failed(f'GET /sites/{code}', exc, cfg.eco.fallback_wait_s)}; productCount there counts "
                         "products whose record lists this site.")
    entry = idx.site_by_code[code]
    if rec is not None:
        releases, cells = _record_releases(rec), _record_cells(rec, tag)
        description = rec.site_description
    else:
        releases, cells = _catalog_releases(idx, entry), _catalog_cells(idx, code)
        description = entry.description or None
    budget = cfg.limits.text_budget_detail
    description, cut = clip(description, budget)
    if cut:
        notes.append(f"siteDescription clipped to {budget} characters.")
    data_products = data_products_page = location = None
    if "products" in wanted:
        rows = _site_products(cells, args.products_query)
        data_products = rows[args.products_offset:args.products_offset + args.products_limit]
        data_products_page = page(args.products_offset, args.products_limit, len(data_products), len(rows))
    if "location" in wanted:
        location = _location(await client.location(code))
    # The record's facts, or the catalog's when the record could not be read.
    place: upstream_models.Site | SiteEntry = rec if rec is not None else entry
    return GetSiteOutput(
        site_code=code, site_name=rec.site_name if rec is not None else entry.name,
        site_description=description if "description" in wanted else None, site_type=place.site_type,
        site_latitude=rec.site_latitude if rec is not None else entry.latitude,
        site_longitude=rec.site_longitude if rec is not None else entry.longitude,
        state_code=place.state_code, state_name=place.state_name, domain_code=place.domain_code,
        domain_name=place.domain_name, deims_id=rec.deims_id if rec is not None else entry.deims_id or None,
        product_count=len(cells), latest_release=releases[-1].release if releases else None,
        urls=SiteUrls(api=f"{cfg.eco.base_url}/sites/{code}" + (f"?release={tag}" if tag else ""),
                      portal=f"{FIELD_SITES}/{code.lower()}"),
        releases=releases if "releases" in wanted else None, data_products=data_products,
        data_products_page=data_products_page, location=location, resolved=resolved, notes=notes,
        next_steps=_site_steps(code, data_products, data_products_page, args),
        source=Source(origin="upstream" if rec is not None or location is not None else "catalog",
                      api_base_url=cfg.eco.base_url))


def _site_steps(code: str, data_products: list[SiteProduct] | None, pg: Page | None,
                args: GetSiteInput) -> list[NextStep]:
    steps = [NextStep(tool="eco_get_availability", arguments={"site": code}, why="Months per product at this site.")]
    if data_products:
        top = data_products[0].product_code
        steps.append(NextStep(tool="eco_get_availability", arguments={"product": top, "site": code},
                              why=f"Every month of {top} here."))
    if pg and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_site", arguments={**more, "products_offset": pg.next_offset},
                              why="The next page of products."))
    return steps


def _record_releases(rec: upstream_models.Site) -> list[SiteReleaseInfo]:
    return [SiteReleaseInfo(release=r.release, generation_date=r.generation_date, url=r.url)
            for r in sorted(rec.releases, key=lambda r: r.release)]


def _record_cells(rec: upstream_models.Site, tag: str | None) -> Cells:
    return {d.data_product_code: (d.data_product_title,
                                  av.cell_from_upstream(d.available_releases, d.available_months, tag))
            for d in rec.data_products}


def _catalog_releases(idx: CatalogIndex, s: SiteEntry) -> list[SiteReleaseInfo]:
    dates = {r.tag: r.generation_date.isoformat().replace("+00:00", "Z") if r.generation_date else None
             for r in idx.releases}
    return [SiteReleaseInfo(release=t, generation_date=dates.get(t), url=None) for t in sorted(s.releases)]


def _catalog_cells(idx: CatalogIndex, code: str) -> Cells:
    return {p.code: (p.name, dict(p.cells[code].ranges)) for p in idx.products if code in p.cells}


def _site_products(cells: Cells, query: str | None) -> list[SiteProduct]:
    q = (query or "").strip().lower()
    rows = []
    for code, (title, cell) in sorted(cells.items()):
        if q and q not in code.lower() and q not in (title or "").lower():
            continue
        data = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
        if data is None:
            continue
        rows.append(SiteProduct(product_code=code, product_name=title, month_count=data.month_count,
                                provisional_month_count=data.provisional_month_count,
                                first_month=data.first_month, last_month=data.last_month,
                                ranges=data.ranges or [], by_release=data.by_release))
    return rows


def _location(loc: upstream_models.Location) -> SiteLocation:
    return SiteLocation(
        location_name=loc.location_name, location_description=loc.location_description,
        location_type=loc.location_type, latitude=loc.location_decimal_latitude,
        longitude=loc.location_decimal_longitude, elevation=loc.location_elevation,
        utm_easting=loc.location_utm_easting, utm_northing=loc.location_utm_northing,
        utm_zone=loc.location_utm_zone, utm_hemisphere=loc.location_utm_hemisphere,
        properties=loc.properties,
        active_periods=[ActivePeriod(activated_date=p.activated_date, deactivated_date=p.deactivated_date)
                        for p in loc.active_periods],
        parent=loc.location_parent, child_count=len(loc.location_children),
    )
