"""The sites family's reads (eco_search_sites, eco_get_site): search over the in-memory catalog
index, elevations from the SITE location records, one site's record, and the wire types of
their answers.

    search_sites(*, query=None, domain_code=None, state_code=None, site_type=None, product=None,
                 release=None, latitude=None, longitude=None, radius_km=100.0, limit=50, offset=0)
        -> SiteSearchResult(items=[SiteHit], total, page, facets, did_you_mean, index_source,
                            index_age_seconds, resolved); synchronous, no upstream calls; a
                            search's matches are kept per index (any page of it reuses them)
    await with_elevations(client=, hits=) -> ElevatedSites(items=[SiteSummary], from_upstream, note)
    await site_detail(idx=, client=, site=, release=, include=, ...) -> Answer[SiteRecord]

`product` accepts a code or a name and `release` a RELEASE-YYYY tag or latest (catalog.resolve).
Facets count domains, states and site types over the whole filtered set (not the page).
Bad filter values raise EcoError("invalid_argument") naming the field.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from catalog import availability as av
from catalog import checks, resolve
from catalog.index import STOPWORDS, CatalogIndex, SiteEntry, get_index, words
from catalog.search_common import Found, KeptSearches
from catalog.text import clip
from eco_core.errors import EcoError
from eco_core.wire import Answer, Page, WireModel, page

if TYPE_CHECKING:
    from upstream import models as upstream_models
    from upstream.client import UpstreamClient

SITE_SECTIONS = ("products", "releases", "description", "location")
FIELD_SITES = "https://www.neonscience.org/field-sites"
# Upstream failures after which elevations, or a site's products, come from the catalog instead (with a note).
ELEVATION_FALLBACK = ("upstream_error", "upstream_unavailable", "rate_limited")

Placement = tuple[float | None, float | None, float | None, int | None, str | None]


# -- wire types ----------------------------------------------------------------------------

class Utm(WireModel):
    easting: float | None
    northing: float | None
    zone: int | None
    hemisphere: str | None


def _absent_if_none(value: Any) -> bool:
    return value is None


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
                                      description="Distance from the given point (proximity search only).")
    elevation: float | None = Field(None, exclude_if=_absent_if_none,
                                    description="Metres; only with include_elevation, when known.")
    utm: Utm | None = Field(None, exclude_if=_absent_if_none, description="Only with include_elevation, when known.")


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
    ranges: list[str] = Field(description="ISO 8601 month intervals YYYY-MM/YYYY-MM.")
    by_release: dict[str, list[str]] = Field(description="Month ranges per release; PROVISIONAL its own key.")


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


class SiteRecord(WireModel):
    """eco_get_site's answer without the envelope (the tool's output adds it)."""

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


# -- search --------------------------------------------------------------------------------

@dataclass
class SiteHit:
    site: SiteEntry
    score: float
    matched_on: list[str]
    distance_km: float | None = None
    # Its summary without placement, made once: a hit is kept with its search (see _Found), so a
    # repeated search or its next page reuses the validated item. Never changed once made.
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


@dataclass
class SiteSearchResult:
    items: list[SiteHit]
    total: int
    page: Page
    facets: dict[str, dict[str, int]]
    did_you_mean: list[str] | None
    index_source: str | None
    index_age_seconds: int | None
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)


def _facets(hits: list[SiteHit]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {"domains": {}, "states": {}, "siteTypes": {}}
    for h in hits:
        for key, value in (("domains", h.site.domain_code), ("states", h.site.state_code),
                           ("siteTypes", h.site.site_type)):
            out[key][value] = out[key].get(value, 0) + 1
    return out


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    r = 6371.0088
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))


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


_site_words: tuple[CatalogIndex | None, _SiteWords | None] = (None, None)


def _words_of(idx: CatalogIndex) -> _SiteWords:
    global _site_words
    held_idx, held = _site_words
    if held_idx is not idx or held is None:
        held = _SiteWords.of(idx.sites)
        _site_words = (idx, held)
    return held


def search_sites(
    *,
    query: str | None = None,
    domain_code: str | None = None,
    state_code: str | None = None,
    site_type: str | None = None,
    product: str | None = None,
    release: str | None = None,
    latitude: float | None = None,
    longitude: float | None = None,
    radius_km: float = 100.0,
    limit: int = 50,
    offset: int = 0,
    index: CatalogIndex | None = None,
) -> SiteSearchResult:
    checks.paging(limit, offset, 100)
    domain = checks.domain_code(domain_code)
    state = state_code.strip().upper() if state_code else None
    if state is not None and not re.fullmatch(r"[A-Z]{2}", state):
        raise checks.bad("state_code", f"expected two letters, got {state_code!r}")
    stype = site_type.strip().upper() if site_type else None
    if stype is not None and stype not in ("CORE", "GRADIENT"):
        raise checks.bad("site_type", "must be CORE or GRADIENT")
    if (latitude is None) != (longitude is None):
        raise checks.bad("latitude" if latitude is None else "longitude", "latitude and longitude go together")
    if latitude is not None and not -90 <= latitude <= 90:
        raise checks.bad("latitude", "must be from -90 to 90")
    if longitude is not None and not -180 <= longitude <= 180:
        raise checks.bad("longitude", "must be from -180 to 180")
    if not 0 < radius_km <= 5000:
        raise checks.bad("radius_km", "must be > 0 and <= 5000")
    idx = index or get_index()
    checks.built(idx, "sites")
    key = (query, domain, state, stype, product, release, latitude, longitude, radius_km)
    found = _KEPT.found(idx, key, KEPT_SEARCHES, lambda: _search(
        idx, query=query, domain=domain, state=state, stype=stype, product=product, release=release,
        latitude=latitude, longitude=longitude, radius_km=radius_km))
    info = idx.info.get("sites")
    return SiteSearchResult(**found.page_of(offset, limit), index_source=info.source if info else None,
                            index_age_seconds=idx.age_of("sites"))


# Searches kept per index (the latest index only), as catalog.products keeps product searches: a
# built index never changes, so a search's matches are a function of its filters and the index.
# Each call re-ran the scan of every site, the words' fuzzy pass over the vocabulary and the
# facets (~0.6M instructions, most of the tool's own work). Bounded; the oldest goes first.
KEPT_SEARCHES = 256
_KEPT: KeptSearches[SiteHit] = KeptSearches()
_Found = Found[SiteHit]


def _kept(idx: CatalogIndex) -> dict[tuple[Any, ...], Found[SiteHit]]:
    return _KEPT.held(idx)


def _search(idx: CatalogIndex, *, query: str | None, domain: str | None, state: str | None, stype: str | None,
            product: str | None, release: str | None, latitude: float | None, longitude: float | None,
            radius_km: float) -> _Found:
    resolved: dict[str, dict[str, Any]] = {}
    prod = None
    if product is not None:
        rp = resolve.resolve_product(product, index=idx)
        prod = idx.by_code[rp.code]
        resolved["product"] = rp.echo()
    rel = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        rel = rr.tag
        resolved["release"] = rr.echo()
    qwords = [w for w in words(query or "") if w not in STOPWORDS] if query else []

    per_word = [_words_of(idx).matches(w) for w in qwords]

    hits: list[SiteHit] = []
    # Query words name their candidates (the sites every word matches): only they are filtered.
    positions = sorted(set(per_word[0]).intersection(*per_word[1:])) if per_word else range(len(idx.sites))
    for pos in positions:
        s = idx.sites[pos]
        if domain and s.domain_code != domain:
            continue
        if state and s.state_code != state:
            continue
        if stype and s.site_type != stype:
            continue
        if prod is not None:
            if rel is not None and s.code not in prod.sites_in_release.get(rel, ()):
                continue
            if rel is None and s.code not in prod.sites:
                continue
        elif rel is not None and rel not in s.releases:
            continue
        score, fields = 0.0, set()
        if per_word:
            found = [m[pos] for m in per_word]
            score = sum(m[0] for m in found)
            fields = {m[1] for m in found}
        dist = None
        if latitude is not None and longitude is not None:  # validated above: both or neither
            dist = haversine_km(latitude, longitude, s.latitude, s.longitude)
            if dist > radius_km:
                continue
            dist = round(dist, 1)
        hits.append(SiteHit(s, round(score, 3), sorted(fields), dist))
    if latitude is not None:
        hits.sort(key=lambda h: (h.distance_km, h.site.code))
    elif qwords:
        hits.sort(key=lambda h: (-h.score, h.site.code))
    did_you_mean = None
    if not hits and query:
        from rapidfuzz import fuzz, process

        choices = {s.code: f"{s.code} {s.name}" for s in idx.sites}
        did_you_mean = [c for _, _, c in process.extract(query, choices, scorer=fuzz.WRatio, score_cutoff=60, limit=5)]
    return _Found(hits=hits, facets=_facets(hits), did_you_mean=did_you_mean, resolved=resolved)


# -- elevations ----------------------------------------------------------------------------

async def site_elevations(*, client: UpstreamClient, codes: list[str]) -> dict[str, Placement]:
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


@dataclass(frozen=True)
class ElevatedSites:
    items: list[SiteSummary]
    from_upstream: bool
    note: str | None


async def with_elevations(*, client: UpstreamClient, hits: list[SiteHit]) -> ElevatedSites:
    """The hits as summaries with elevation and UTM from the location records; when the upstream
    fails, from the cached catalog, with a note that says so."""
    if not hits:
        return ElevatedSites([], from_upstream=False, note=None)
    try:
        found = await site_elevations(client=client, codes=[h.site.code for h in hits])
    except EcoError as exc:
        if exc.code not in ELEVATION_FALLBACK:
            raise
        found = {h.site.code: (h.site.elevation, h.site.utm_easting, h.site.utm_northing, h.site.utm_zone,
                               h.site.utm_hemisphere) for h in hits}
        note = f"Elevation and UTM come from the cached catalog: GET /locations/sites failed ({exc.code})."
        return ElevatedSites([h.summary(found.get(h.site.code, _NOWHERE)) for h in hits], False, note)
    return ElevatedSites([h.summary(found.get(h.site.code, _NOWHERE)) for h in hits], True, None)


_NOWHERE: Placement = (None, None, None, None, None)


# -- detail --------------------------------------------------------------------------------

def _site_products(cells: dict[str, tuple[str | None, av.Cell]], query: str | None) -> list[SiteProduct]:
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


Parts = tuple[dict[str, Any], list[SiteReleaseInfo], dict[str, tuple[str | None, av.Cell]]]


def _catalog_site(idx: CatalogIndex, code: str) -> Parts:
    s = idx.site_by_code[code]
    base: dict[str, Any] = {"site_name": s.name, "site_description": s.description or None, "site_type": s.site_type,
            "site_latitude": s.latitude, "site_longitude": s.longitude, "state_code": s.state_code,
            "state_name": s.state_name, "domain_code": s.domain_code, "domain_name": s.domain_name,
            "deims_id": s.deims_id or None}
    dates = {r.tag: r.generation_date.isoformat().replace("+00:00", "Z") if r.generation_date else None
             for r in idx.releases}
    releases = [SiteReleaseInfo(release=t, generation_date=dates.get(t), url=None) for t in sorted(s.releases)]
    cells: dict[str, tuple[str | None, av.Cell]] = {
        p.code: (p.name, dict(p.cells[code].ranges)) for p in idx.products if code in p.cells}
    return base, releases, cells


def _record_site(rec: upstream_models.Site, tag: str | None) -> Parts:
    base = {"site_name": rec.site_name, "site_description": rec.site_description, "site_type": rec.site_type,
            "site_latitude": rec.site_latitude, "site_longitude": rec.site_longitude, "state_code": rec.state_code,
            "state_name": rec.state_name, "domain_code": rec.domain_code, "domain_name": rec.domain_name,
            "deims_id": rec.deims_id}
    releases = [SiteReleaseInfo(release=r.release, generation_date=r.generation_date, url=r.url)
                for r in sorted(rec.releases, key=lambda r: r.release)]
    cells = {d.data_product_code: (d.data_product_title,
                                   av.cell_from_upstream(d.available_releases, d.available_months, tag))
             for d in rec.data_products}
    return base, releases, cells


async def site_detail(
    *, idx: CatalogIndex, client: UpstreamClient, base_url: str, site: str, release: str | None,
    include: list[str], products_query: str | None = None, products_limit: int = 100, products_offset: int = 0,
    text_budget: int = 4000,
) -> Answer[SiteRecord]:
    r = resolve.resolve_site(site, index=idx)
    resolved: dict[str, Any] = {"site": r.echo()}
    wanted = set(SITE_SECTIONS) if "all" in include else set(include)
    notes: list[str] = []
    tag = None
    record_read = True
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
        base, releases, cells = _record_site(await client.site(r.code, release=tag), tag)
        notes.append(f"The site as published in {tag}.")
    else:
        # The site's own record, as the catalog's product count (eco_search_sites) was built from:
        # its products and release links. The product catalog's site lists can disagree with it.
        try:
            base, releases, cells = _record_site(await client.site(r.code), None)
        except EcoError as exc:
            if exc.code not in ELEVATION_FALLBACK:
                raise
            base, releases, cells = _catalog_site(idx, r.code)
            record_read = False
            notes.append(f"Products and releases come from the cached catalog: GET /sites/{r.code} failed "
                         f"({exc.code}); productCount there counts products whose record lists this site.")
    description, cut = clip(base.pop("site_description"), text_budget)
    if cut:
        notes.append(f"siteDescription clipped to {text_budget} characters.")
    data_products = data_products_page = location = None
    if "products" in wanted:
        rows = _site_products(cells, products_query)
        data_products = rows[products_offset:products_offset + products_limit]
        data_products_page = page(products_offset, products_limit, len(data_products), len(rows))
    if "location" in wanted:
        location = _location(await client.location(r.code))
    record = SiteRecord(
        site_code=r.code, **base, site_description=description if "description" in wanted else None,
        product_count=len(cells), latest_release=releases[-1].release if releases else None,
        urls=SiteUrls(api=f"{base_url}/sites/{r.code}" + (f"?release={tag}" if tag else ""),
                      portal=f"{FIELD_SITES}/{r.code.lower()}"),
        releases=releases if "releases" in wanted else None, data_products=data_products,
        data_products_page=data_products_page, location=location,
    )
    return Answer(record, resolved=resolved, notes=notes, from_upstream=record_read or location is not None)
