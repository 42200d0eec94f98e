"""The products family's reads (eco_search_products, eco_get_product): search over the in-memory
catalog index, one product's record, and the wire types of their answers.

    search_products(*, query=None, theme=None, science_team=None, status=None, level=None,
                    has_expanded=None, site=None, domain_code=None, release=None,
                    available_from=None, available_to=None, sort="relevance", limit=25, offset=0)
        -> ProductSearchResult(items=[ProductHit], total, page, facets, did_you_mean, index_source,
                               index_age_seconds, resolved); synchronous, no upstream calls; a
                               search's matches are kept per index (any page of it reuses them)
    await product_detail(idx=, client=, product=, release=, include=, ...) -> Answer[ProductRecord]
        (`client`: the upstream client or a function giving it, called only when the upstream is asked)
        the compact base from the catalog (no request), and opt-in sections from the upstream
        detail record (`GET /products/{code}`, cached per `cache.ttl_s.detail`)

Query rules: every query word (stop words aside) must match a word of the name, keywords,
themes or description, exactly, as the start of a word, or within a small typo; a bare product
code (with or without revision) matches that code exactly, whatever its status unless `status`
is given. `status` None means ACTIVE (the spec's default) for text queries. `site` accepts codes
or names (resolved through catalog.resolve, which raises not_found / ambiguous_input); `release`
must be a RELEASE-YYYY tag or latest. Facets count themes, teams, levels and statuses over the
whole filtered set (not the page). Bad filter values raise EcoError("invalid_argument") naming
the field.
"""

from __future__ import annotations

import re
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from catalog import availability as av
from catalog import checks, resolve
from catalog.availability import AvailabilityRow
from catalog.index import STOPWORDS, CatalogIndex, ProductEntry, get_index, overlaps, words
from catalog.releases import ReleaseInfo
from catalog.search_common import Found, KeptSearches
from catalog.text import clip
from eco_core.wire import Answer, Page, WireModel, page

if TYPE_CHECKING:
    from upstream import models as upstream_models
    from upstream.client import UpstreamClient

CODE = re.compile(r"^\s*(DP[1-4]\.\d{5})(\.\d{3})?\s*$", re.IGNORECASE)
TEAMS = ("AIS", "AOP", "AOS", "TIS", "TOS")
STATUSES = ("ACTIVE", "FUTURE", "RETIRED", "ALL")
SORTS = ("relevance", "productCode", "productName")


# -- wire types ----------------------------------------------------------------------------

class ProductSummary(WireModel):
    product_code: str
    product_name: str
    product_status: str
    product_science_team_abbr: str | None
    level: int
    themes: list[str]
    product_has_expanded: bool
    description: str | None = Field(None, description="Clipped description.")
    score: float
    matched_on: list[str]
    site_count: int
    # The overall range only: its first and last months apart said the same again in every item.
    month_range: str | None = Field(description="YYYY-MM/YYYY-MM, all sites.")
    latest_release: str | None


class AvailabilitySummary(WireModel):
    site_count: int
    first_month: str | None
    last_month: str | None
    month_range: str | None = Field(None, description="YYYY-MM/YYYY-MM, all sites.")
    site_months: int
    by_release: dict[str, int] = Field(default_factory=dict, description="Per release, PROVISIONAL too.")


class ProductUrls(WireModel):
    api: str
    portal: str
    doi: str | None = Field(description="Latest release's DOI.")


class SpecInfo(WireModel):
    spec_id: str
    spec_number: str
    spec_type: str | None
    spec_size: int | None
    spec_description: str | None
    spec_url: str


class ChangeLog(WireModel):
    id: int
    parent_issue_id: int | None
    issue_date: str | None
    resolved_date: str | None
    date_range_start: str | None
    date_range_end: str | None
    location_affected: str | None
    issue: str | None
    resolution: str | None


class BiorepositoryCollection(WireModel):
    collection_code: str
    collection_name: str | None
    collection_url: str | None
    collection_content_url: str | None
    collection_download_url: str | None


def _absent_if_none(value: Any) -> bool:
    return value is None


class ProductRecord(WireModel):
    """eco_get_product's answer without the envelope (the tool's output adds it)."""

    product_code: str
    product_code_long: str
    product_code_presentation: str
    product_name: str
    product_description: str | None
    product_status: str
    product_category: str
    product_science_team: str | None
    product_science_team_abbr: str | None
    product_publication_format_type: str | None
    product_has_expanded: bool
    themes: list[str]
    keywords: list[str]
    latest_release: str | None
    releases: list[ReleaseInfo]
    availability: AvailabilitySummary
    specs_count: int
    # The upstream detail record's fields, absent unless `include` (or `release`) asked for it:
    # 14 nulls on every catalog answer were a tenth of its bytes, paid per call on the wire.
    change_log_count: int | None = Field(exclude_if=_absent_if_none, description="Absent from the catalog.")
    urls: ProductUrls
    product_abstract: str | None = Field(exclude_if=_absent_if_none)
    product_design_description: str | None = Field(exclude_if=_absent_if_none)
    product_study_description: str | None = Field(exclude_if=_absent_if_none)
    product_sensor: str | None = Field(exclude_if=_absent_if_none)
    product_remarks: str | None = Field(exclude_if=_absent_if_none)
    product_basic_description: str | None = Field(exclude_if=_absent_if_none)
    product_expanded_description: str | None = Field(exclude_if=_absent_if_none)
    text_truncated: list[str] = Field(description="Fields clipped to text_budget.")
    specs: list[SpecInfo] | None = Field(exclude_if=_absent_if_none)
    change_logs: list[ChangeLog] | None = Field(exclude_if=_absent_if_none, description="Newest first.")
    change_logs_page: Page | None = Field(exclude_if=_absent_if_none)
    availability_rows: list[AvailabilityRow] | None = Field(exclude_if=_absent_if_none, description="A row per site.")
    availability_page: Page | None = Field(exclude_if=_absent_if_none)
    biorepository_collections: list[BiorepositoryCollection] | None = Field(exclude_if=_absent_if_none)


# -- search --------------------------------------------------------------------------------

@dataclass
class ProductHit:
    product: ProductEntry
    score: float
    matched_on: list[str]
    # Its summaries by text budget: a hit is kept with its search (see _Found), so a repeated
    # search or its next page reuses the validated item. Never changed once made.
    _summaries: dict[int, ProductSummary] = field(default_factory=dict, repr=False, compare=False)

    @property
    def code(self) -> str:
        return self.product.code

    def summary(self, text_budget: int) -> ProductSummary:
        """The hit as a search result item, its description clipped to `text_budget`."""
        made = self._summaries.get(text_budget)
        if made is not None:
            return made
        p = self.product
        made = ProductSummary(
            product_code=p.code, product_name=p.name, product_status=p.status,
            product_science_team_abbr=p.team_abbr or None, level=p.level, themes=list(p.themes),
            product_has_expanded=p.has_expanded, description=clip(p.description, text_budget)[0] or None,
            score=self.score, matched_on=self.matched_on, site_count=p.site_count, month_range=p.month_range,
            latest_release=p.latest_release,
        )
        self._summaries[text_budget] = made
        return made


@dataclass
class ProductSearchResult:
    items: list[ProductHit]
    total: int
    page: Page
    facets: dict[str, dict[str, int]]
    did_you_mean: list[str] | None
    index_source: str | None
    index_age_seconds: int | None
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)


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
    # Names worth a fuzzy score: those of products holding a word of the query (as the index
    # reads it: exact, plural, prefix or near spelling). WRatio costs ~5 µs a name, and a zero-hit
    # query scored all ~200 names, five times the rest of its search; a name sharing no word
    # with the query is scored only when no product shares one.
    near = sorted({pos for w in qwords for tok, _ in idx.product_tokens_for(w) for pos in idx.postings[tok]})
    names = [idx.products[pos].name for pos in near] if near else [p.name for p in idx.products]
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
    checks.paging(limit, offset, 100)
    st = (status or "ACTIVE").upper()
    if st not in STATUSES:
        raise checks.bad("status", f"must be one of {', '.join(STATUSES)}")
    team = science_team.upper() if science_team else None
    if team is not None and team not in TEAMS:
        raise checks.bad("science_team", f"must be one of {', '.join(TEAMS)}")
    if level is not None and (not isinstance(level, int) or not 1 <= level <= 4):
        raise checks.bad("level", "must be an integer from 1 to 4")
    if sort not in SORTS:
        raise checks.bad("sort", f"must be one of {', '.join(SORTS)}")
    lo, hi = checks.month("available_from", available_from), checks.month("available_to", available_to)
    if lo is not None and hi is not None and lo > hi:
        raise checks.bad("available_from", "is after available_to")
    domain = checks.domain_code(domain_code)
    idx = index or get_index()
    checks.built(idx, "products")
    key = (query, theme, team, status, level, has_expanded, site, domain, release, lo, hi, sort)
    found = _KEPT.found(idx, key, KEPT_SEARCHES, lambda: _search(
        idx, query=query, theme=theme, team=team, st=st, status=status, level=level, has_expanded=has_expanded,
        site=site, domain=domain, release=release, lo=lo, hi=hi, sort=sort))
    info = idx.info.get("products")
    return ProductSearchResult(**found.page_of(offset, limit), index_source=info.source if info else None,
                               index_age_seconds=idx.age_of("products"))


# Searches kept per index (the latest index only): a built index never changes, so a search's
# matches are a function of its filters and of the index. An agent pages through one search
# (offset) and many ask the same few; each page re-ran matching, scoring, facets over every
# match and, for a miss, a fuzzy pass over ~200 names (~1M instructions a call, more than the
# rest of the tool's own work together). Bounded; the oldest goes first.
KEPT_SEARCHES = 256
_KEPT: KeptSearches[ProductHit] = KeptSearches()
_Found = Found[ProductHit]


def _kept(idx: CatalogIndex) -> dict[tuple[Any, ...], Found[ProductHit]]:
    return _KEPT.held(idx)


def _search(idx: CatalogIndex, *, query: str | None, theme: str | None, team: str | None, st: str,
            status: str | None, level: int | None, has_expanded: bool | None, site: str | None,
            domain: str | None, release: str | None, lo: int | None, hi: int | None, sort: str) -> _Found:
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
    # A text query names its candidates: only they are filtered (positions keep the index order).
    for pos in sorted(scored) if scored is not None else range(len(idx.products)):
        p = idx.products[pos]
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
    return _Found(hits=hits, facets=facets, did_you_mean=did_you_mean, resolved=resolved)


def _available(p: ProductEntry, site_code, domain_sites, rel, window: bool, lo: int, hi: int) -> bool:
    if site_code is None and domain_sites is None and rel is None and not window:
        return True
    if site_code is not None or domain_sites is not None:
        sites = [site_code] if site_code is not None else [s for s in p.sites if s in domain_sites]
        for s in sites:
            cell = p.cells.get(s)
            if cell is None:
                continue
            ivs = cell.in_release.get(rel) if rel else cell.all
            if ivs and (not window or overlaps(ivs, lo, hi)):
                return True
        return False
    ivs = p.in_release.get(rel) if rel else p.all
    if rel and not ivs:
        # Released with no availability rows (e.g. AOP mosaics): the product's release list decides.
        return rel in p.release_tags and not window
    if not ivs:
        return False
    return not window or overlaps(ivs, lo, hi)


# -- detail --------------------------------------------------------------------------------

SECTIONS = ("abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases", "change_logs",
            "availability", "biorepository")
# Text sections -> the record's fields they reveal (result key, upstream attribute).
TEXT_FIELDS = {
    "abstract": [("product_abstract", "productAbstract")],
    "design": [("product_design_description", "productDesignDescription")],
    "study": [("product_study_description", "productStudyDescription")],
    "sensor": [("product_sensor", "productSensor")],
    "remarks": [("product_remarks", "productRemarks")],
    "packages": [("product_basic_description", "productBasicDescription"),
                 ("product_expanded_description", "productExpandedDescription")],
}
PORTAL = "https://data.neonscience.org/data-products"


def sections_of(include: list[str]) -> set[str]:
    return set(SECTIONS) if "all" in include else set(include)


def _summary(cells: dict[str, av.Cell]) -> AvailabilitySummary:
    rows = [r for r in (av.shape_row(c, provisional="include", start=None, end=None, fmt="counts")
                        for c in cells.values()) if r is not None]
    t = av.totals(rows)
    first, last = t.first_month, t.last_month
    return AvailabilitySummary(site_count=len(rows), first_month=first, last_month=last,
                               month_range=f"{first}/{last}" if first else None, site_months=t.site_months,
                               by_release=t.by_release)


# The catalog summary of a product depends only on its ProductEntry, which a built index never
# changes; computing it (every site's intervals merged) was ~40 % of a warm eco_get_product under
# load, so it is kept per entry and dropped with it (entries are not hashable: keyed by id).
_summaries: dict[int, tuple[weakref.ref[ProductEntry], AvailabilitySummary]] = {}


def _catalog_summary(p: ProductEntry) -> AvailabilitySummary:
    hit = _summaries.get(id(p))
    if hit is not None and hit[0]() is p:
        return hit[1].model_copy()
    summary = _summary({s: dict(c.ranges) for s, c in p.cells.items()})
    key = id(p)
    _summaries[key] = (weakref.ref(p, lambda _ref, key=key: _summaries.pop(key, None)), summary)  # type: ignore[misc]
    return summary.model_copy()


# The record served from the catalog alone (no include, no release) depends only on the entry
# and the REST base of its URLs: kept per entry as the summary is, and dropped with it. Building
# and validating it (its releases, its URLs, 33 fields) was half of a catalog eco_get_product's
# own work. A caller gets a shallow copy and changes nothing inside it (the gateway never does).
_records: dict[int, tuple[weakref.ref[ProductEntry], str, ProductRecord]] = {}


def _catalog_record(p: ProductEntry, base_url: str) -> ProductRecord:
    hit = _records.get(id(p))
    if hit is not None and hit[0]() is p and hit[1] == base_url:
        return hit[2].model_copy()
    out = _base(p, base_url)
    out["text_truncated"] = []
    record = ProductRecord(**out, product_abstract=None, product_design_description=None,
                           product_study_description=None, product_sensor=None, product_remarks=None,
                           product_basic_description=None, product_expanded_description=None, specs=None,
                           change_logs=None, change_logs_page=None, availability_rows=None,
                           availability_page=None, biorepository_collections=None)
    key = id(p)
    _records[key] = (weakref.ref(p, lambda _ref, key=key: _records.pop(key, None)), base_url, record)  # type: ignore[misc]
    return record.model_copy()


def _base(p: ProductEntry, base_url: str) -> dict[str, Any]:
    """The catalog's fields of the record, by ProductRecord field name."""
    releases = [ReleaseInfo(release=r["release"], generation_date=r.get("generationDate"), doi=r.get("doi"),
                            doi_generation_date=r.get("doiGenerationDate")) for r in p.releases]
    return {
        "product_code": p.code, "product_code_long": p.code_long, "product_code_presentation": p.code_presentation,
        "product_name": p.name, "product_description": p.description or None, "product_status": p.status,
        "product_category": p.category, "product_science_team": p.team or None,
        "product_science_team_abbr": p.team_abbr or None,
        "product_publication_format_type": p.publication_format_type or None,
        "product_has_expanded": p.has_expanded, "themes": list(p.themes), "keywords": list(p.keywords),
        "latest_release": p.latest_release, "releases": releases,
        "availability": _catalog_summary(p),
        "specs_count": p.specs_count, "change_log_count": None,
        "urls": ProductUrls(api=f"{base_url}/products/{p.code}", portal=f"{PORTAL}/{p.code}",
                            doi=releases[-1].doi if releases else None),
    }


def _from_record(rec: upstream_models.Product, out: dict[str, Any], tag: str | None) -> None:
    """The detail record is authoritative (and is the only source for a release view)."""
    releases = [ReleaseInfo(release=r.release, generation_date=r.generation_date,
                            doi=r.product_doi.url if r.product_doi else None,
                            doi_generation_date=r.product_doi.generation_date if r.product_doi else None)
                for r in sorted(rec.releases, key=lambda r: r.release)]
    out.update({
        "product_name": rec.product_name, "product_description": rec.product_description,
        "product_status": rec.product_status, "product_category": rec.product_category,
        "product_science_team": rec.product_science_team, "product_science_team_abbr": rec.product_science_team_abbr,
        "product_publication_format_type": rec.product_publication_format_type,
        "product_has_expanded": rec.product_has_expanded, "themes": rec.themes, "keywords": rec.keywords,
        "releases": releases, "latest_release": releases[-1].release if releases else None,
        "specs_count": len(rec.specs), "change_log_count": len(rec.change_logs or []),
    })
    urls: ProductUrls = out["urls"]
    out["urls"] = ProductUrls(api=urls.api + (f"?release={tag}" if tag else ""), portal=urls.portal,
                              doi=releases[-1].doi if releases else None)
    if tag:
        out["availability"] = _summary(_cells(rec, tag))


def _cells(rec: upstream_models.Product, tag: str | None) -> dict[str, av.Cell]:
    return {s.site_code: av.cell_from_upstream(s.available_releases, s.available_months, tag) for s in rec.site_codes}


def _change_logs(rec: upstream_models.Product, limit: int, offset: int) -> tuple[list[ChangeLog], int]:
    logs = sorted(rec.change_logs or [], key=lambda c: (c.issue_date or "", c.id), reverse=True)
    return [ChangeLog(id=c.id, parent_issue_id=c.parent_issue_id, issue_date=c.issue_date,
                      resolved_date=c.resolved_date, date_range_start=c.date_range_start,
                      date_range_end=c.date_range_end, location_affected=c.location_affected, issue=c.issue,
                      resolution=c.resolution) for c in logs[offset:offset + limit]], len(logs)


def _availability_rows(idx: CatalogIndex, rec: upstream_models.Product, tag: str | None, limit: int,
                       offset: int) -> tuple[list[AvailabilityRow], int]:
    rows = []
    for site, cell in sorted(_cells(rec, tag).items()):
        data = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
        if data is None:
            continue
        s = idx.site_by_code.get(site)
        rows.append(av.availability_row(data, product_code=rec.product_code, product_name=rec.product_name,
                                        site_code=site, site_name=s.name if s else None))
    return rows[offset:offset + limit], len(rows)


async def product_detail(
    *, idx: CatalogIndex, client: UpstreamClient | Callable[[], UpstreamClient], base_url: str, product: str, release: str | None,
    include: list[str], change_logs_limit: int = 25, change_logs_offset: int = 0, availability_limit: int = 100,
    availability_offset: int = 0, text_budget: int = 4000,
) -> Answer[ProductRecord]:
    r = resolve.resolve_product(product, index=idx)
    resolved: dict[str, Any] = {"product": r.echo()}
    tag = None
    if release is not None:
        rr = resolve.resolve_release(release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
    wanted = sections_of(include)
    entry = idx.by_code[r.code]
    if not wanted and tag is None:
        return Answer(_catalog_record(entry, base_url), resolved=resolved, notes=[], from_upstream=False)
    out = _base(entry, base_url)
    truncated: list[str] = []
    notes: list[str] = []
    out["text_truncated"] = truncated
    for key in ("product_abstract", "product_design_description", "product_study_description", "product_sensor",
                "product_remarks", "product_basic_description", "product_expanded_description", "specs",
                "change_logs", "change_logs_page", "availability_rows", "availability_page",
                "biorepository_collections"):
        out[key] = None
    # A function giving the client is called only now: the catalog answer above needs none.
    upstream = client() if callable(client) else client
    rec = await upstream.product(r.code, release=tag)
    _from_record(rec, out, tag)
    if tag:
        notes.append(f"The product as published in {tag}.")
    for section, fields in TEXT_FIELDS.items():
        if section not in wanted:
            continue
        for key, upstream_name in fields:
            text, cut = clip(getattr(rec, key), text_budget)
            out[key] = text
            if cut:
                truncated.append(upstream_name)
    if "specs" in wanted:
        out["specs"] = [SpecInfo(spec_id=s.spec_id, spec_number=s.spec_number, spec_type=s.spec_type,
                                 spec_size=s.spec_size, spec_description=s.spec_description, spec_url=s.spec_url)
                        for s in rec.specs]
    if "change_logs" in wanted:
        logs, total = _change_logs(rec, change_logs_limit, change_logs_offset)
        out["change_logs"] = logs
        out["change_logs_page"] = page(change_logs_offset, change_logs_limit, len(logs), total)
    if "availability" in wanted:
        rows, total = _availability_rows(idx, rec, tag, availability_limit, availability_offset)
        out["availability_rows"] = rows
        out["availability_page"] = page(availability_offset, availability_limit, len(rows), total)
    if "biorepository" in wanted:
        out["biorepository_collections"] = [
            BiorepositoryCollection(collection_code=c.collection_code, collection_name=c.collection_name,
                                    collection_url=c.collection_url, collection_content_url=c.collection_content_url,
                                    collection_download_url=c.collection_download_url)
            for c in rec.biorepository_collections or []]
    if truncated:
        notes.append(f"Text clipped to {text_budget} characters: {', '.join(truncated)}; raise text_budget for more.")
    return Answer(ProductRecord(**out), resolved=resolved, notes=notes, from_upstream=True)
