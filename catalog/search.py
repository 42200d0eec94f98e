"""Product and site search over the in-memory index (catalog.index). Synchronous; no upstream calls.

    search_products(*, query=None, theme=None, science_team=None, status=None, level=None,
                    has_expanded=None, site=None, domain_code=None, release=None,
                    available_from=None, available_to=None, sort="relevance", limit=25, offset=0)
        -> ProductSearchResult(items=[ProductHit], total, facets, did_you_mean, index_source,
                               index_age_seconds, resolved)
    search_sites(*, query=None, domain_code=None, state_code=None, site_type=None, product=None,
                 release=None, latitude=None, longitude=None, radius_km=100.0, limit=50, offset=0)
        -> SiteSearchResult(items=[SiteHit], total, did_you_mean, index_source, index_age_seconds,
                            resolved)

Query rules (products): every query word (stop words aside) must match a word of the name,
keywords, themes or description, exactly, as the start of a word, or within a small typo;
a bare product code (with or without revision) matches that code exactly, whatever its status
unless `status` is given. `status` None means ACTIVE (the spec's default) for text queries.
`site` and `product` filters accept codes or names (resolved through catalog.resolve, which
raises not_found / ambiguous_input); `release` must be a RELEASE-YYYY tag or latest.
Facets count themes, teams, levels and statuses over the whole filtered set (not the page).
Bad filter values raise EcoError("invalid_argument") naming the field.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from catalog import resolve
from catalog.index import (
    STOPWORDS,
    CatalogIndex,
    ProductEntry,
    SiteEntry,
    get_index,
    overlaps,
    words,
)
from catalog.months import month_index
from eco_core.errors import EcoError

CODE = re.compile(r"^\s*(DP[1-4]\.\d{5})(\.\d{3})?\s*$", re.IGNORECASE)
MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
DOMAIN = re.compile(r"^D(0[1-9]|1\d|20)$")
TEAMS = ("AIS", "AOP", "AOS", "TIS", "TOS")
STATUSES = ("ACTIVE", "FUTURE", "RETIRED", "ALL")
SORTS = ("relevance", "productCode", "productName")


@dataclass
class ProductHit:
    product: ProductEntry
    score: float
    matched_on: list[str]

    @property
    def code(self) -> str:
        return self.product.code


@dataclass
class ProductSearchResult:
    items: list[ProductHit]
    total: int
    facets: dict[str, dict[str, int]]
    did_you_mean: list[str] | None
    index_source: str | None
    index_age_seconds: int | None
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class SiteHit:
    site: SiteEntry
    score: float
    matched_on: list[str]
    distance_km: float | None = None


@dataclass
class SiteSearchResult:
    items: list[SiteHit]
    total: int
    did_you_mean: list[str] | None
    index_source: str | None
    index_age_seconds: int | None
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)


def _bad(field_name: str, message: str) -> EcoError:
    return EcoError("invalid_argument", f"{field_name}: {message}", details={"field": field_name})


def _month(field_name: str, value: str | None) -> int | None:
    if value is None:
        return None
    if not MONTH.match(value):
        raise _bad(field_name, f"expected a month YYYY-MM, got {value!r}")
    return month_index(value)


def _page(limit: int, offset: int, max_limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= max_limit:
        raise _bad("limit", f"must be an integer from 1 to {max_limit}")
    if not isinstance(offset, int) or offset < 0:
        raise _bad("offset", "must be an integer >= 0")


def _domain(value: str | None) -> str | None:
    if value is None:
        return None
    code = value.strip().upper()
    if not DOMAIN.match(code):
        raise _bad("domain_code", f"expected D01 to D20, got {value!r}")
    return code


def _ready(idx: CatalogIndex, catalog: str) -> None:
    if not (idx.info.get(catalog) and idx.info[catalog].row_count):
        raise EcoError("catalog_unavailable", f"the {catalog} catalog has not been built yet")


# -- products ------------------------------------------------------------------------------

def _match_words(idx: CatalogIndex, qwords: list[str]) -> dict[int, tuple[float, set[str]]] | None:
    """Positions of products matching every word, with a score and the fields that matched."""
    result: dict[int, tuple[float, set[str]]] | None = None
    for w in qwords:
        per: dict[int, tuple[float, str]] = {}
        for tok, quality in idx.product_tokens_for(w):
            for pos, weight in idx.postings[tok].items():
                s = weight * quality
                if s > per.get(pos, (0.0, ""))[0]:
                    per[pos] = (s, idx.field_of[(tok, pos)])
        if result is None:
            result = {pos: (s, {f}) for pos, (s, f) in per.items()}
        else:
            result = {pos: (sc + per[pos][0], fs | {per[pos][1]}) for pos, (sc, fs) in result.items() if pos in per}
        if not result:
            return {}
    return result


def _suggest(idx: CatalogIndex, query: str, qwords: list[str]) -> list[str]:
    from rapidfuzz import fuzz, process

    out: list[str] = []
    fixed = []
    for w in qwords:
        alts = idx.product_tokens_for(w)
        fixed.append(max(alts, key=lambda t: t[1])[0] if alts else None)
    if fixed and all(fixed) and fixed != qwords:
        out.append(" ".join(f for f in fixed if f))
    names = [p.name for p in idx.products]
    for name, _score, _ in process.extract(query, names, scorer=fuzz.WRatio, score_cutoff=60, limit=5):
        if name not in out:
            out.append(name)
    return out[:5]


def search_products(
    *,
    query: str | None = None,
    theme: str | None = None,
    science_team: str | None = None,
    status: str | None = None,
    level: int | None = None,
    has_expanded: bool | None = None,
    site: str | None = None,
    domain_code: str | None = None,
    release: str | None = None,
    available_from: str | None = None,
    available_to: str | None = None,
    sort: str = "relevance",
    limit: int = 25,
    offset: int = 0,
    index: CatalogIndex | None = None,
) -> ProductSearchResult:
    _page(limit, offset, 100)
    st = (status or "ACTIVE").upper()
    if st not in STATUSES:
        raise _bad("status", f"must be one of {', '.join(STATUSES)}")
    team = science_team.upper() if science_team else None
    if team is not None and team not in TEAMS:
        raise _bad("science_team", f"must be one of {', '.join(TEAMS)}")
    if level is not None and (not isinstance(level, int) or not 1 <= level <= 4):
        raise _bad("level", "must be an integer from 1 to 4")
    if sort not in SORTS:
        raise _bad("sort", f"must be one of {', '.join(SORTS)}")
    lo, hi = _month("available_from", available_from), _month("available_to", available_to)
    if lo is not None and hi is not None and lo > hi:
        raise _bad("available_from", "is after available_to")
    domain = _domain(domain_code)
    idx = index or get_index()
    _ready(idx, "products")
    resolved: dict[str, dict[str, Any]] = {}
    site_code = None
    if site is not None:
        rs = resolve.resolve_site(site, index=idx)
        site_code = rs.code
        resolved["site"] = rs.echo()
    rel = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        rel = rr.tag
        resolved["release"] = rr.echo()
    domain_sites = {s.code for s in idx.sites if s.domain_code == domain} if domain else None
    window = lo is not None or hi is not None
    wlo, whi = (lo if lo is not None else -1), (hi if hi is not None else 10**9)

    # Which products the query text selects, with scores.
    q = (query or "").strip()
    code_match = CODE.match(q) if q else None
    scored: dict[int, tuple[float, set[str]]] | None
    qwords: list[str] = []
    if code_match:
        wanted = code_match.group(1).upper() + (code_match.group(2) or "")
        scored = {i: (100.0, {"productCode"}) for i, p in enumerate(idx.products)
                  if p.code == wanted or (not code_match.group(2) and p.base_code == wanted)}
        if status is None:
            st = "ALL"  # a code names one product; the default status filter must not hide it
    elif q:
        all_words = words(q)
        qwords = [w for w in all_words if w not in STOPWORDS] or all_words
        scored = _match_words(idx, qwords) if qwords else None
        if scored:
            phrase = " ".join(all_words)
            for pos in scored:
                if phrase in " ".join(words(idx.products[pos].name)):
                    s, f = scored[pos]
                    scored[pos] = (s + 2.0, f)
    else:
        scored = None

    hits: list[ProductHit] = []
    for pos, p in enumerate(idx.products):
        if scored is not None and pos not in scored:
            continue
        if st != "ALL" and p.status != st:
            continue
        if team and p.team_abbr != team:
            continue
        if level is not None and p.level != level:
            continue
        if has_expanded is not None and p.has_expanded != has_expanded:
            continue
        if theme and not any(t.lower().startswith(theme.strip().lower()) for t in p.themes):
            continue
        if not _available(p, site_code, domain_sites, rel, window, wlo, whi):
            continue
        score, fields = scored[pos] if scored is not None else (0.0, set())
        hits.append(ProductHit(p, round(score, 3), sorted(fields)))

    if sort == "productCode":
        hits.sort(key=lambda h: h.product.code)
    elif sort == "productName":
        hits.sort(key=lambda h: (h.product.name.lower(), h.product.code))
    else:
        hits.sort(key=lambda h: (-h.score, h.product.code))
    facets = {
        "themes": dict(Counter(t for h in hits for t in h.product.themes)),
        "teams": dict(Counter(h.product.team_abbr or "unknown" for h in hits)),
        "levels": dict(Counter(str(h.product.level) for h in hits)),
        "statuses": dict(Counter(h.product.status for h in hits)),
    }
    did_you_mean = _suggest(idx, q, qwords) if not hits and q and not code_match else None
    info = idx.info.get("products")
    return ProductSearchResult(
        items=hits[offset:offset + limit],
        total=len(hits),
        facets=facets,
        did_you_mean=did_you_mean,
        index_source=info.source if info else None,
        index_age_seconds=idx.age_seconds.get("products"),
        resolved=resolved,
    )


def _available(p: ProductEntry, site_code, domain_sites, rel, window: bool, lo: int, hi: int) -> bool:
    if site_code is None and domain_sites is None and rel is None and not window:
        return True
    if site_code is not None or domain_sites is not None:
        sites = [site_code] if site_code is not None else [s for s in p.sites if s in domain_sites]
        for s in sites:
            cell = p.cells.get(s)
            if cell is None:
                continue
            ivs = cell.by_release.get(rel) if rel else cell.all
            if ivs and (not window or overlaps(ivs, lo, hi)):
                return True
        return False
    ivs = p.by_release.get(rel) if rel else p.all
    if rel and not ivs:
        # Released with no availability rows (e.g. AOP mosaics): the product's release list decides.
        return rel in p.release_tags and not window
    if not ivs:
        return False
    return not window or overlaps(ivs, lo, hi)


# -- sites ---------------------------------------------------------------------------------

def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    r = 6371.0088
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))


def _site_word(site: SiteEntry, w: str) -> tuple[float, str] | None:
    if w == site.code.lower():
        return 10.0, "siteCode"
    if w in site.tokens:
        if w in words(site.name):
            return 3.0, "siteName"
        if w in (site.state_code.lower(), *words(site.state_name)):
            return 2.0, "state"
        return 1.5, "domain"
    if len(w) >= 3 and any(t.startswith(w) for t in site.tokens):
        return 1.0, "siteName"
    if len(w) >= 5:
        from rapidfuzz import fuzz

        if any(fuzz.ratio(w, t) >= 80 for t in site.tokens):
            return 0.6, "siteName"
    return None


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
    _page(limit, offset, 100)
    domain = _domain(domain_code)
    state = state_code.strip().upper() if state_code else None
    if state is not None and not re.fullmatch(r"[A-Z]{2}", state):
        raise _bad("state_code", f"expected two letters, got {state_code!r}")
    stype = site_type.strip().upper() if site_type else None
    if stype is not None and stype not in ("CORE", "GRADIENT"):
        raise _bad("site_type", "must be CORE or GRADIENT")
    if (latitude is None) != (longitude is None):
        raise _bad("latitude" if latitude is None else "longitude", "latitude and longitude go together")
    if latitude is not None and not -90 <= latitude <= 90:
        raise _bad("latitude", "must be from -90 to 90")
    if longitude is not None and not -180 <= longitude <= 180:
        raise _bad("longitude", "must be from -180 to 180")
    if not 0 < radius_km <= 5000:
        raise _bad("radius_km", "must be > 0 and <= 5000")
    idx = index or get_index()
    _ready(idx, "sites")
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

    hits: list[SiteHit] = []
    for s in idx.sites:
        if domain and s.domain_code != domain:
            continue
        if state and s.state_code != state:
            continue
        if stype and s.site_type != stype:
            continue
        if prod is not None:
            if rel is not None and s.code not in prod.sites_by_release.get(rel, ()):
                continue
            if rel is None and s.code not in prod.sites:
                continue
        elif rel is not None and rel not in s.releases:
            continue
        score, fields = 0.0, set()
        if qwords:
            matches = [_site_word(s, w) for w in qwords]
            found = [m for m in matches if m is not None]
            if len(found) < len(matches):
                continue
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
    info = idx.info.get("sites")
    return SiteSearchResult(
        items=hits[offset:offset + limit],
        total=len(hits),
        did_you_mean=did_you_mean,
        index_source=info.source if info else None,
        index_age_seconds=idx.age_seconds.get("sites"),
        resolved=resolved,
    )
