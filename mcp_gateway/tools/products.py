"""eco_search_products and eco_get_product: the product catalog, searched locally, and one
product's record (catalog first; opt-in sections from the upstream detail record)."""

from __future__ import annotations

from typing import Literal

from asgiref.sync import sync_to_async
from pydantic import Field

from catalog.queries.text import clip
from catalog.search import ProductHit, search_products
from mcp_gateway.calls import CallContext
from mcp_gateway.models import Envelope, NextStep, Page, ToolInput
from mcp_gateway.registry import ToolSpec
from mcp_gateway.tools._shared import (
    DOMAIN_PATTERN,
    MONTH_PATTERN,
    ProductSummary,
    catalog_index,
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
    r = await sync_to_async(search_products)(
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
