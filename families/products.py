"""The products family: eco_search_products and eco_get_product. The data products searched over
the in-memory catalog index (no request), and one product's record: the catalog's fields without
a request, opt-in sections from the upstream detail record (`GET /products/{code}`, cached per
`cache.ttl_s.detail`).

Query rules: every query word (stop words aside) must match a word of the name, keywords, themes
or description, exactly, as the start of a word, or within a small typo; a bare product code
(with or without revision) matches that code exactly, whatever its status unless a `status` other than
ACTIVE is given. An unset `status` means ACTIVE (the spec's default) for text queries. `site` accepts codes
or names and `release` a RELEASE-YYYY tag or latest (catalog.resolve). Facets count themes, teams,
levels and statuses over the whole filtered set (not the page).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from catalog import availability as av
from catalog import checks, resolve
from catalog.access import catalog_index, catalog_source
from catalog.availability import ProductAvailabilityRow
from catalog.checks import DOMAIN_PATTERN
from catalog.index import STOPWORDS, CatalogIndex, ProductEntry, overlaps, words
from catalog.months import MONTH_PATTERN, month_index
from catalog.releases import ReleaseInfo
from catalog.search_common import Found, KeptSearches
from catalog.suggest import nearest
from catalog.text import clip
from eco_core.memo import memos
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page, returned_again
from families.call import CallContext

if TYPE_CHECKING:
    from upstream import models as upstream_models

CODE = re.compile(r"^\s*(DP[1-4]\.\d{5})(\.\d{3})?\s*$", re.IGNORECASE)
PORTAL = "https://data.neonscience.org/data-products"


def _absent_if_none(value: Any) -> bool:
    return value is None


# -- eco_search_products -----------------------------------------------------------------------

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
    month_range: str | None = Field(description="All sites.")
    latest_release: str | None


class SearchProductsInput(ToolInput):
    query: str | None = Field(None, max_length=500, description=(
        "All words must match (typos tolerated); a bare product code matches exactly."))
    theme: str | None = Field(None, max_length=100, description="Theme prefix.")
    science_team: Literal["AIS", "AOP", "AOS", "TIS", "TOS"] | None = None
    status: Literal["ACTIVE", "FUTURE", "RETIRED", "ALL"] = "ACTIVE"
    level: int | None = Field(None, ge=1, le=4)
    has_expanded: bool | None = Field(None)
    site: str | None = Field(None, max_length=200, description="With data there.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="With data there.")
    release: str | None = Field(None, max_length=64)
    available_from: str | None = Field(None, pattern=MONTH_PATTERN)
    available_to: str | None = Field(None, pattern=MONTH_PATTERN)
    sort: Literal["relevance", "productCode", "productName"] = "relevance"
    limit: int = Field(25, ge=1, le=100)
    offset: int = Field(0, ge=0)


class SearchProductsOutput(Envelope):
    items: list[ProductSummary]
    page: Page
    facets: dict[str, dict[str, int]] = Field(description="Counts per theme, team, level, status.")
    did_you_mean: list[str] | None = Field(description="Suggestions when nothing matched.")
    index_source: Literal["graphql", "rest"] | None
    index_age_seconds: int | None


async def search_products(args: SearchProductsInput, call: CallContext) -> SearchProductsOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    # The index is in memory and the search never touches the database: it runs on the loop, as a
    # hop to the catalog-read pool and back costs more than the search (see catalog_index).
    found = find_products(idx, args).page_of(args.offset, args.limit)
    items = [h.summary(cfg.limits.text_budget_summary) for h in found["items"]]
    pg: Page = found["page"]
    notes = []
    if not found["total"] and args.status == "ACTIVE" and args.query:
        notes.append("Only ACTIVE products are searched by default; try status='ALL'.")
    info = idx.info.get("products")
    return SearchProductsOutput(
        items=items, page=pg, facets=found["facets"], did_you_mean=found["did_you_mean"],
        index_source=info.source if info and info.source in ("graphql", "rest") else None,
        index_age_seconds=idx.age_of("products"), resolved=found["resolved"], notes=notes,
        next_steps=_search_steps(args, items, pg), source=catalog_source(cfg, []))


def _search_steps(args: SearchProductsInput, items: list[ProductSummary], pg: Page) -> list[NextStep]:
    steps: list[NextStep] = []
    if items:
        top = items[0].product_code
        where = {"site": args.site} if args.site else {}
        steps.append(NextStep(tool="eco_get_availability", arguments={"product": top, **where},
                              why=f"Where and when {top} has data."))
        steps.append(NextStep(tool="eco_get_product", arguments={"product": top, "include": ["abstract"]},
                              why=f"What {top} measures and how."))
    if pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_search_products", arguments={**more, "offset": pg.next_offset},
                              why="The next page of matches."))
    return steps


@dataclass
class ProductHit:
    product: ProductEntry
    score: float
    matched_on: list[str]
    # Its items by text budget: a hit is kept with its search, so a repeated search or its next
    # page reuses the validated item. Never changed once made.
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


# A built index never changes, so a search's matches are a function of its filters and the index:
# an agent pages through one search and many ask the same few, and each page re-ran matching,
# scoring, facets and, for a miss, a fuzzy pass over every name.
kept_searches: KeptSearches[ProductHit] = KeptSearches("products.searches", max_entries=256)


def find_products(idx: CatalogIndex, args: SearchProductsInput) -> Found[ProductHit]:
    """Every match of the search's filters over `idx`, whatever page is asked (the limit and
    offset are not part of a search): kept per index and filters. Synchronous, no request."""
    lo = month_index(args.available_from) if args.available_from is not None else None
    hi = month_index(args.available_to) if args.available_to is not None else None
    if lo is not None and hi is not None and lo > hi:
        raise checks.bad("available_from", "is after available_to")
    checks.built(idx, "products")
    # Unset means ACTIVE, except that a bare product code finds the product whatever its status;
    # the default sent as it stands (a client filling defaults from the schema) means the same.
    status = args.status if "status" in args.model_fields_set and args.status != "ACTIVE" else None
    domain = args.domain_code.upper() if args.domain_code is not None else None
    key = (args.query, args.theme, args.science_team, status, args.level, args.has_expanded, args.site, domain,
           args.release, lo, hi, args.sort)
    return kept_searches.found(idx, key, lambda: _search(idx, args, status, domain, lo, hi))


def _search(idx: CatalogIndex, args: SearchProductsInput, status: str | None, domain: str | None,
            lo: int | None, hi: int | None) -> Found[ProductHit]:
    resolved: dict[str, dict[str, Any]] = {}
    site_code = None
    if args.site is not None:
        rs = resolve.resolve_site(args.site, index=idx)
        site_code = rs.code
        resolved["site"] = rs.echo()
    rel = None
    if args.release is not None:
        rr = resolve.resolve_release(args.release, index=idx)
        rel = rr.tag
        resolved["release"] = rr.echo()
    domain_sites = {s.code for s in idx.sites if s.domain_code == domain} if domain else None
    window = lo is not None or hi is not None
    wlo, whi = (lo if lo is not None else -1), (hi if hi is not None else 10**9)
    st = args.status

    # Which products the query text selects, with scores.
    q = (args.query or "").strip()
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

    team, level, has_expanded = args.science_team, args.level, args.has_expanded
    theme = args.theme.strip().lower() if args.theme else None

    def kept(p: ProductEntry) -> bool:
        """Whether the filters other than the query text keep `p`."""
        return ((st == "ALL" or p.status == st) and (not team or p.team_abbr == team)
                and (level is None or p.level == level) and (has_expanded is None or p.has_expanded == has_expanded)
                and (not theme or any(t.lower().startswith(theme) for t in p.themes))
                and _available(p, site_code, domain_sites, rel, window, wlo, whi))

    hits: list[ProductHit] = []
    # A text query names its candidates: only they are filtered (positions keep the index order).
    for pos in sorted(scored) if scored is not None else range(len(idx.products)):
        p = idx.products[pos]
        if not kept(p):
            continue
        score, fields = scored[pos] if scored is not None else (0.0, set())
        hits.append(ProductHit(p, round(score, 3), sorted(fields)))

    if args.sort == "productCode":
        hits.sort(key=lambda h: h.product.code)
    elif args.sort == "productName":
        hits.sort(key=lambda h: (h.product.name.lower(), h.product.code))
    else:
        hits.sort(key=lambda h: (-h.score, h.product.code))
    facets = {
        "themes": dict(Counter(t for h in hits for t in h.product.themes)),
        "teams": dict(Counter(h.product.team_abbr or "unknown" for h in hits)),
        "levels": dict(Counter(str(h.product.level) for h in hits)),
        "statuses": dict(Counter(h.product.status for h in hits)),
    }
    did_you_mean = None
    if not hits and q:
        # A code one digit off is offered the codes nearest it (what eco_get_product suggests).
        did_you_mean = nearest(q.upper(), {p.code: p.name for p in idx.products if kept(p)}) if code_match else (
            _suggest(idx, q, qwords, kept))
    return Found(hits=hits, facets=facets, did_you_mean=did_you_mean, resolved=resolved)


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


def _suggest(idx: CatalogIndex, query: str, qwords: list[str], kept: Callable[[ProductEntry], bool]) -> list[str]:
    """Queries that find something under the same filters (`kept`): the query with each word
    spelt as the index knows it, then names of the products nearest to it."""
    from rapidfuzz import fuzz, process

    out: list[str] = []
    fixed = []
    for w in qwords:
        alts = idx.product_tokens_for(w)
        fixed.append(max(alts, key=lambda t: t[1])[0] if alts else None)
    if fixed and all(fixed) and fixed != qwords:
        found = _match_words(idx, [f for f in fixed if f]) or {}
        if any(kept(idx.products[pos]) for pos in found):
            out.append(" ".join(f for f in fixed if f))
    # Names worth a fuzzy score: those of products holding a word of the query (as the index
    # reads it: exact, plural, prefix or near spelling). A zero-hit query scoring every name cost
    # more than the rest of its search; a name sharing no word with the query is scored only when
    # no product shares one.
    near = sorted({pos for w in qwords for tok, _ in idx.product_tokens_for(w) for pos in idx.postings[tok]
                   if kept(idx.products[pos])})
    names = [idx.products[pos].name for pos in near] if near else [p.name for p in idx.products if kept(p)]
    for name, _score, _ in process.extract(query, names, scorer=fuzz.WRatio, score_cutoff=60, limit=5):
        if name not in out:
            out.append(name)
    return out[:5]


def _available(p: ProductEntry, site_code: str | None, domain_sites: set[str] | None, rel: str | None,
               window: bool, lo: int, hi: int) -> bool:
    if site_code is None and domain_sites is None and rel is None and not window:
        return True
    if site_code is not None or domain_sites is not None:
        sites = [site_code] if site_code is not None else [s for s in p.sites if domain_sites and s in domain_sites]
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


# -- eco_get_product ---------------------------------------------------------------------------

Section = Literal["abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases",
                  "change_logs", "availability", "biorepository", "all"]
SECTIONS = ("abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases", "change_logs",
            "availability", "biorepository")
# Text sections -> the fields they reveal (output field, upstream attribute as named in textTruncated).
TEXT_FIELDS = {
    "abstract": [("product_abstract", "productAbstract")],
    "design": [("product_design_description", "productDesignDescription")],
    "study": [("product_study_description", "productStudyDescription")],
    "sensor": [("product_sensor", "productSensor")],
    "remarks": [("product_remarks", "productRemarks")],
    "packages": [("product_basic_description", "productBasicDescription"),
                 ("product_expanded_description", "productExpandedDescription")],
}


class AvailabilitySummary(WireModel):
    site_count: int
    first_month: str | None
    last_month: str | None
    month_range: str | None = Field(None, description="All sites.")
    site_months: int
    by_release: dict[str, int] = Field(default_factory=dict)


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


class GetProductInput(ToolInput):
    product: str = Field(min_length=1, max_length=300, description="Code (revision optional) or name.")
    release: str | None = Field(None, max_length=64)
    include: list[Section] = Field([], max_length=12, description=(
        "Upstream sections to add (one request)."))
    change_logs_limit: int = Field(25, ge=1, le=200)
    change_logs_offset: int = Field(0, ge=0)
    availability_limit: int = Field(100, ge=1, le=300)
    availability_offset: int = Field(0, ge=0)
    text_budget: int = Field(4000, ge=100, le=20000, description="Characters per text section.")


class GetProductOutput(Envelope):
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
    # their nulls on every catalog answer were bytes paid per call on the wire, for nothing.
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
    availability_rows: list[ProductAvailabilityRow] | None = Field(exclude_if=_absent_if_none, description="A row per site.")
    availability_page: Page | None = Field(exclude_if=_absent_if_none)
    biorepository_collections: list[BiorepositoryCollection] | None = Field(exclude_if=_absent_if_none)


# Catalog-only answers (no include, no release: read off the index alone) for the same input on
# the same index: such an answer depends on nothing else, so the same object is returned again
# and the gateway reuses its dump and text instead of validating, dumping and encoding the record
# every call. Inputs are kept per JSON text (mcp_gateway.arguments), so a repeated input is the
# same object; a catalog-only input holds no list, so it is always kept.
_catalog_answers = memos.by_identity("products.catalog_answers", max_entries=256)
# The catalog's part of a product's answer, per index entry and REST base (its URLs): building
# and validating it is most of a catalog-only call's own work, whatever input named the product.
_catalog_records = memos.by_identity("products.catalog_records", max_entries=1024)
# The availability summary of an index entry (every site's intervals merged), which the catalog
# record and an upstream answer without a release both carry.
_availability_summaries = memos.by_identity("products.availability_summaries", max_entries=1024)


async def get_product(args: GetProductInput, call: CallContext) -> GetProductOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    catalog_only = not args.include and args.release is None
    if catalog_only:
        kept = _catalog_answers.get(idx, args, cfg)
        if kept is not None:
            return kept
    rp = resolve.resolve_product(args.product, index=idx)
    resolved: dict[str, Any] = {"product": rp.echo()}
    tag = None
    if args.release is not None:
        rr = resolve.resolve_release(args.release, index=idx)
        tag, resolved["release"] = rr.tag, rr.echo()
    entry = idx.by_code[rp.code]
    if not catalog_only:
        return await _from_upstream(idx, entry, tag, resolved, args, call)
    base = _catalog_record(entry, cfg.eco.base_url)
    out = base.model_copy(update={
        "resolved": resolved, "notes": [], "next_steps": _product_steps(entry.code, None, None, None, None, args),
        "source": Source(origin="catalog", api_base_url=cfg.eco.base_url)})
    _catalog_answers.put(idx, args, cfg, value=returned_again(out))
    return out


def _product_steps(code: str, rows: list[ProductAvailabilityRow] | None, change_logs_page: Page | None,
                   availability_page: Page | None, tag: str | None, args: GetProductInput) -> list[NextStep]:
    steps = [NextStep(tool="eco_get_availability", arguments={"product": code}, why="Months of data per site.")]
    if rows:
        steps.append(NextStep(tool="eco_get_site", arguments={"site": rows[0].site_code},
                              why="Another product's view: what that site measures."))
    for key, pg in (("change_logs", change_logs_page), ("availability", availability_page)):
        if pg and pg.next_offset is not None:
            steps.append(NextStep(tool="eco_get_product", arguments={
                "product": code, "include": [key], f"{key}_offset": pg.next_offset,
                f"{key}_limit": getattr(args, f"{key}_limit"),
                **({"release": tag} if tag else {})},
                why=f"The next page of {key.replace('_', ' ')}."))
    if not args.include:
        steps.append(NextStep(tool="eco_get_product", arguments={"product": code, "include": ["abstract", "specs"]},
                              why="The abstract and the documents (one upstream request)."))
    return steps


def _catalog_record(p: ProductEntry, base_url: str) -> GetProductOutput:
    """The answer's catalog fields (its envelope left empty): kept per entry and REST base; the
    caller copies it before filling the envelope."""
    kept = _catalog_records.get(p, base_url)
    if kept is not None:
        return kept
    releases = [ReleaseInfo(release=r["release"], generation_date=r.get("generationDate"), doi=r.get("doi"),
                            doi_generation_date=r.get("doiGenerationDate")) for r in p.releases]
    record = GetProductOutput(
        product_code=p.code, product_code_long=p.code_long, product_code_presentation=p.code_presentation,
        product_name=p.name, product_description=p.description or None, product_status=p.status,
        product_category=p.category, product_science_team=p.team or None,
        product_science_team_abbr=p.team_abbr or None,
        product_publication_format_type=p.publication_format_type or None,
        product_has_expanded=p.has_expanded, themes=list(p.themes), keywords=list(p.keywords),
        latest_release=p.latest_release, releases=releases, availability=_catalog_summary(p),
        specs_count=p.specs_count, change_log_count=None,
        urls=ProductUrls(api=f"{base_url}/products/{p.code}", portal=f"{PORTAL}/{p.code}",
                         doi=releases[-1].doi if releases else None),
        product_abstract=None, product_design_description=None, product_study_description=None,
        product_sensor=None, product_remarks=None, product_basic_description=None,
        product_expanded_description=None, text_truncated=[], specs=None, change_logs=None,
        change_logs_page=None, availability_rows=None, availability_page=None, biorepository_collections=None)
    _catalog_records.put(p, base_url, value=record)
    return record


async def _from_upstream(idx: CatalogIndex, p: ProductEntry, tag: str | None, resolved: dict[str, Any],
                         args: GetProductInput, call: CallContext) -> GetProductOutput:
    """The answer from the detail record, which is authoritative (and the only source for a
    release view); the product's code and its spellings come from the catalog."""
    wanted = set(SECTIONS) if "all" in args.include else set(args.include)
    rec = await call.client.product(p.code, release=tag)
    notes = [f"The product as published in {tag}."] if tag else []
    releases = [ReleaseInfo(release=r.release, generation_date=r.generation_date,
                            doi=r.product_doi.url if r.product_doi else None,
                            doi_generation_date=r.product_doi.generation_date if r.product_doi else None)
                for r in sorted(rec.releases, key=lambda r: r.release)]
    texts: dict[str, str | None] = {}
    truncated: list[str] = []
    for section, fields in TEXT_FIELDS.items():
        if section in wanted:
            for key, upstream_name in fields:
                texts[key], cut = clip(getattr(rec, key), args.text_budget)
                if cut:
                    truncated.append(upstream_name)
    logs = logs_page = rows = rows_page = None
    if "change_logs" in wanted:
        logs, total = _change_logs(rec, args.change_logs_limit, args.change_logs_offset)
        logs_page = page(args.change_logs_offset, args.change_logs_limit, len(logs), total)
    if "availability" in wanted:
        rows, total = _availability_rows(idx, rec, tag, args.availability_limit, args.availability_offset)
        rows_page = page(args.availability_offset, args.availability_limit, len(rows), total)
    if truncated:
        notes.append(f"Text clipped to {args.text_budget} characters: {', '.join(truncated)}; "
                     "raise text_budget for more.")
    api = f"{call.cfg.eco.base_url}/products/{p.code}" + (f"?release={tag}" if tag else "")
    return GetProductOutput(
        product_code=p.code, product_code_long=p.code_long, product_code_presentation=p.code_presentation,
        product_name=rec.product_name, product_description=rec.product_description,
        product_status=rec.product_status, product_category=rec.product_category,
        product_science_team=rec.product_science_team, product_science_team_abbr=rec.product_science_team_abbr,
        product_publication_format_type=rec.product_publication_format_type,
        product_has_expanded=rec.product_has_expanded, themes=rec.themes, keywords=rec.keywords,
        latest_release=releases[-1].release if releases else None, releases=releases,
        availability=_summary(_cells(rec, tag)) if tag else _catalog_summary(p),
        specs_count=len(rec.specs), change_log_count=len(rec.change_logs or []),
        urls=ProductUrls(api=api, portal=f"{PORTAL}/{p.code}", doi=releases[-1].doi if releases else None),
        product_abstract=texts.get("product_abstract"),
        product_design_description=texts.get("product_design_description"),
        product_study_description=texts.get("product_study_description"),
        product_sensor=texts.get("product_sensor"), product_remarks=texts.get("product_remarks"),
        product_basic_description=texts.get("product_basic_description"),
        product_expanded_description=texts.get("product_expanded_description"),
        text_truncated=truncated,
        specs=[SpecInfo(spec_id=s.spec_id, spec_number=s.spec_number, spec_type=s.spec_type, spec_size=s.spec_size,
                        spec_description=s.spec_description, spec_url=s.spec_url)
               for s in rec.specs] if "specs" in wanted else None,
        change_logs=logs, change_logs_page=logs_page, availability_rows=rows, availability_page=rows_page,
        biorepository_collections=[
            BiorepositoryCollection(collection_code=c.collection_code, collection_name=c.collection_name,
                                    collection_url=c.collection_url, collection_content_url=c.collection_content_url,
                                    collection_download_url=c.collection_download_url)
            for c in rec.biorepository_collections or []] if "biorepository" in wanted else None,
        resolved=resolved, notes=notes, next_steps=_product_steps(p.code, rows, logs_page, rows_page, tag, args),
        source=Source(origin="upstream", api_base_url=call.cfg.eco.base_url))


def _summary(cells: dict[str, av.Cell]) -> AvailabilitySummary:
    rows = [r for r in (av.shape_row(c, provisional="include", start=None, end=None, fmt="counts")
                        for c in cells.values()) if r is not None]
    t = av.totals(rows)
    first, last = t.first_month, t.last_month
    return AvailabilitySummary(site_count=len(rows), first_month=first, last_month=last,
                               month_range=f"{first}/{last}" if first else None, site_months=t.site_months,
                               by_release=t.by_release)


def _catalog_summary(p: ProductEntry) -> AvailabilitySummary:
    """The entry's summary from the catalog, kept per entry; a copy, so no answer changes the kept one."""
    kept = _availability_summaries.get(p)
    if kept is None:
        kept = _summary({s: dict(c.ranges) for s, c in p.cells.items()})
        _availability_summaries.put(p, value=kept)
    return kept.model_copy()


def _cells(rec: upstream_models.Product, tag: str | None) -> dict[str, av.Cell]:
    return {s.site_code: av.cell_from_upstream(s.available_releases, s.available_months, tag) for s in rec.site_codes}


def _change_logs(rec: upstream_models.Product, limit: int, offset: int) -> tuple[list[ChangeLog], int]:
    logs = sorted(rec.change_logs or [], key=lambda c: (c.issue_date or "", c.id), reverse=True)
    return [ChangeLog(id=c.id, parent_issue_id=c.parent_issue_id, issue_date=c.issue_date,
                      resolved_date=c.resolved_date, date_range_start=c.date_range_start,
                      date_range_end=c.date_range_end, location_affected=c.location_affected, issue=c.issue,
                      resolution=c.resolution) for c in logs[offset:offset + limit]], len(logs)


def _availability_rows(idx: CatalogIndex, rec: upstream_models.Product, tag: str | None, limit: int,
                       offset: int) -> tuple[list[ProductAvailabilityRow], int]:
    rows = []
    for site, cell in sorted(_cells(rec, tag).items()):
        data = av.shape_row(cell, provisional="include", start=None, end=None, fmt="ranges")
        if data is None:
            continue
        s = idx.site_by_code.get(site)
        rows.append(av.availability_row(data, product_code=rec.product_code, product_name=rec.product_name,
                                        site_code=site, site_name=s.name if s else None))
    return rows[offset:offset + limit], len(rows)
