"""eco_search_products and eco_get_product: the product catalog, searched locally, and one
product's record (catalog first; opt-in sections from the upstream detail record)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.queries.products import product_detail
from catalog.queries.text import clip
from catalog.search import ProductHit, search_products
from mcp_gateway import ports
from mcp_gateway.context import CallContext
from mcp_gateway.models import Envelope, NextStep, Page, Source, ToolInput, WireModel
from mcp_gateway.registry import ToolSpec
from mcp_gateway.tools._shared import (
    DOMAIN_PATTERN,
    MONTH_PATTERN,
    AvailabilityRow,
    AvailabilitySummary,
    ProductSummary,
    catalog_index,
    catalog_read,
    catalog_source,
    page,
)


class SearchProductsInput(ToolInput):
    query: str | None = Field(None, max_length=500, description=(
        "Words that must all match names, keywords, themes or descriptions (small typos tolerated); "
        "a bare product code matches exactly."))
    theme: str | None = Field(None, max_length=100, description="Theme prefix, case-insensitive.")
    science_team: Literal["AIS", "AOP", "AOS", "TIS", "TOS"] | None = None
    status: Literal["ACTIVE", "FUTURE", "RETIRED", "ALL"] = "ACTIVE"
    level: int | None = Field(None, ge=1, le=4, description="Data product level.")
    has_expanded: bool | None = Field(None, description="Only products with (true) or without an expanded package.")
    site: str | None = Field(None, max_length=200, description="Site code or name: products with data there.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="D01-D20: products with data there.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest: products in that release.")
    available_from: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM: data on or after.")
    available_to: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM: data on or before.")
    sort: Literal["relevance", "productCode", "productName"] = "relevance"
    limit: int = Field(25, ge=1, le=100)
    offset: int = Field(0, ge=0)


class SearchProductsOutput(Envelope):
    items: list[ProductSummary]
    page: Page
    facets: dict[str, dict[str, int]] = Field(description="themes, teams, levels, statuses over the filtered set.")
    did_you_mean: list[str] | None = Field(description="Suggestions when nothing matched.")
    index_source: Literal["graphql", "rest"] | None
    index_age_seconds: int | None


def _summary(hit: ProductHit, text_budget: int) -> ProductSummary:
    p = hit.product
    return ProductSummary(
        product_code=p.code, product_name=p.name, product_status=p.status,
        product_science_team_abbr=p.team_abbr or None, level=p.level, themes=list(p.themes),
        product_has_expanded=p.has_expanded, description=clip(p.description, text_budget)[0] or None,
        score=hit.score, matched_on=hit.matched_on, site_count=p.site_count, first_month=p.first_month,
        last_month=p.last_month, month_range=p.month_range, latest_release=p.latest_release,
    )


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


async def search_products_tool(args: SearchProductsInput, call: CallContext) -> SearchProductsOutput:
    idx = await catalog_index(call.cfg)
    r = await catalog_read(search_products,
        query=args.query, theme=args.theme, science_team=args.science_team,
        # Unset means ACTIVE, except that a bare product code finds the product whatever its status.
        status=args.status if "status" in args.model_fields_set else None,
        level=args.level, has_expanded=args.has_expanded, site=args.site, domain_code=args.domain_code,
        release=args.release, available_from=args.available_from, available_to=args.available_to,
        sort=args.sort, limit=args.limit, offset=args.offset, index=idx,
    )
    items = [_summary(h, call.cfg.limits.text_budget_summary) for h in r.items]
    pg = page(args.offset, args.limit, len(items), r.total)
    notes = []
    if not r.total and args.status == "ACTIVE" and args.query:
        notes.append("Only ACTIVE products are searched by default; try status='ALL'.")
    return SearchProductsOutput(
        items=items, page=pg, facets=r.facets, did_you_mean=r.did_you_mean,
        index_source=r.index_source if r.index_source in ("graphql", "rest") else None,
        index_age_seconds=r.index_age_seconds, resolved=r.resolved, notes=notes,
        next_steps=_search_steps(args, items, pg),
        source=catalog_source(call.cfg, []),
    )


TOOLS = [
    ToolSpec(
        name="eco_search_products",
        title="Search data products",
        description=(
            "Search NEON's ~200 data products in a cached catalog (no upstream request once warm). "
            "All query words must match names, keywords, themes or descriptions; a bare code matches "
            "exactly. Filter by theme, team, status (default ACTIVE), level, expanded package, data at a "
            "site or domain, release, or availability months. Returns scored summaries, facets, paging."
        ),
        surface="discovery",
        input_model=SearchProductsInput,
        output_model=SearchProductsOutput,
        handler=search_products_tool,
        endpoints=("POST /graphql", "GET /products"),
    ),
]


# -- eco_get_product -----------------------------------------------------------------------

Section = Literal["abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases",
                  "change_logs", "availability", "biorepository", "all"]


class GetProductInput(ToolInput):
    product: str = Field(min_length=1, max_length=300, description="Code, code without revision, or exact name.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest: the product as published.")
    include: list[Section] = Field(default_factory=list, max_length=12, description=(
        "Opt-in sections from the upstream detail record; empty gives the compact catalog record."))
    change_logs_limit: int = Field(25, ge=1, le=200)
    change_logs_offset: int = Field(0, ge=0)
    availability_limit: int = Field(100, ge=1, le=300)
    availability_offset: int = Field(0, ge=0)
    text_budget: int = Field(4000, ge=100, le=20000, description="Characters kept per text section.")


class ReleaseInfo(WireModel):
    release: str
    generation_date: str | None
    doi: str | None
    doi_generation_date: str | None


class ProductUrls(WireModel):
    api: str
    portal: str
    doi: str | None = Field(description="DOI of the latest release, when released.")


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
    change_log_count: int | None = Field(description="Null when served from the catalog alone.")
    urls: ProductUrls
    product_abstract: str | None
    product_design_description: str | None
    product_study_description: str | None
    product_sensor: str | None
    product_remarks: str | None
    product_basic_description: str | None
    product_expanded_description: str | None
    text_truncated: list[str] = Field(description="Text fields clipped to text_budget.")
    specs: list[SpecInfo] | None
    change_logs: list[ChangeLog] | None = Field(description="Newest first.")
    change_logs_page: Page | None
    availability_rows: list[AvailabilityRow] | None = Field(description="One row per site, ranges per release.")
    availability_page: Page | None
    biorepository_collections: list[BiorepositoryCollection] | None


def _product_steps(out: dict, args: GetProductInput) -> list[NextStep]:
    code = out["product_code"]
    steps = [NextStep(tool="eco_get_availability", arguments={"product": code}, why="Months of data per site.")]
    if out["availability_rows"]:
        steps.append(NextStep(tool="eco_get_site", arguments={"site": out["availability_rows"][0]["site_code"]},
                              why="Another product's view: what that site measures."))
    for key, page_key in (("change_logs", "change_logs_page"), ("availability", "availability_page")):
        pg = out[page_key]
        if pg and pg["next_offset"] is not None:
            steps.append(NextStep(tool="eco_get_product", arguments={
                "product": code, "include": [key], f"{key}_offset": pg["next_offset"],
                **({"release": out["resolved"]["release"]["release"]} if args.release else {})},
                why=f"The next page of {key.replace('_', ' ')}."))
    if not args.include:
        steps.append(NextStep(tool="eco_get_product", arguments={"product": code, "include": ["abstract", "specs"]},
                              why="The abstract and the documents (one upstream request)."))
    return steps


async def get_product_tool(args: GetProductInput, call: CallContext) -> GetProductOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg)
    out = await product_detail(
        idx=idx, client=ports.upstream_client(), base_url=cfg.eco.base_url, product=args.product,
        release=args.release, include=list(args.include), change_logs_limit=args.change_logs_limit,
        change_logs_offset=args.change_logs_offset, availability_limit=args.availability_limit,
        availability_offset=args.availability_offset, text_budget=args.text_budget,
    )
    upstream = out.pop("from_upstream")
    steps = _product_steps(out, args)
    origin = "upstream" if upstream else "catalog"
    return GetProductOutput(**out, next_steps=steps, source=Source(origin=origin, api_base_url=cfg.eco.base_url))


TOOLS.append(
    ToolSpec(
        name="eco_get_product",
        title="Data product record",
        description=(
            "One data product by code, code without revision, or exact name. Empty include gives the compact "
            "record from the cached catalog (no upstream request): status, team, themes, keywords, releases "
            "with DOIs, availability summary. Opt-in sections from the upstream detail record: abstract, design, "
            "study, sensor, remarks, packages, specs (documents), releases, change_logs (newest first, paged), "
            "availability (one row per site, ranges per release, paged), biorepository, or all. Text is clipped "
            "to text_budget. release reads the product as published in that release."
        ),
        surface="discovery",
        input_model=GetProductInput,
        output_model=GetProductOutput,
        handler=get_product_tool,
        endpoints=("POST /graphql", "GET /products/{productCode}"),
        page_lists={"changeLogs": "changeLogsPage", "availabilityRows": "availabilityPage"},
    )
)
