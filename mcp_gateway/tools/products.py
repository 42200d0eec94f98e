"""eco_search_products and eco_get_product: the product catalog, searched locally, and one
product's record (catalog first; opt-in sections from the upstream detail record)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from catalog.access import catalog_index, catalog_source
from catalog.checks import DOMAIN_PATTERN
from catalog.index import CatalogIndex
from catalog.months import MONTH_PATTERN
from catalog.products import ProductRecord, ProductSummary, product_detail, search_products
from eco_core.config import EcoConfig
from eco_core.kept import KeptByIdentity
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, returned_again
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.arguments import keepable
from mcp_gateway.registry import ToolSpec


class SearchProductsInput(ToolInput):
    query: str | None = Field(None, max_length=500, description=(
        "All words must match (typos tolerated); a bare product code matches exactly."))
    theme: str | None = Field(None, max_length=100, description="Theme prefix.")
    science_team: Literal["AIS", "AOP", "AOS", "TIS", "TOS"] | None = None
    status: Literal["ACTIVE", "FUTURE", "RETIRED", "ALL"] = "ACTIVE"
    level: int | None = Field(None, ge=1, le=4, description="Data product level.")
    has_expanded: bool | None = Field(None, description="With (true) or without an expanded package.")
    site: str | None = Field(None, max_length=200, description="Site code or name: with data there.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="D01-D20: with data there.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest.")
    available_from: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM: data on or after.")
    available_to: str | None = Field(None, pattern=MONTH_PATTERN, description="YYYY-MM: data on or before.")
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
    idx = await catalog_index(call.cfg, call.client)
    # The index is in memory and the search never touches the database: it runs on the loop, as a
    # hop to the catalog-read pool and back costs more than the search (see catalog_index).
    r = search_products(
        query=args.query, theme=args.theme, science_team=args.science_team,
        # Unset means ACTIVE, except that a bare product code finds the product whatever its status.
        status=args.status if "status" in args.model_fields_set else None,
        level=args.level, has_expanded=args.has_expanded, site=args.site, domain_code=args.domain_code,
        release=args.release, available_from=args.available_from, available_to=args.available_to,
        sort=args.sort, limit=args.limit, offset=args.offset, index=idx,
    )
    items = [h.summary(call.cfg.limits.text_budget_summary) for h in r.items]
    pg = r.page
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
            "Search the ~200 data products (cached catalog). Filter by "
            "theme, team, status (default ACTIVE), level, expanded package, data at a site or domain, release "
            "or months; scored, with facets."
        ),
        surface="discovery",
        input_model=SearchProductsInput,
        output_model=SearchProductsOutput,
        read=search_products_tool,
        endpoints=("POST /graphql", "GET /products"),
    ),
]


# -- eco_get_product -----------------------------------------------------------------------

Section = Literal["abstract", "design", "study", "sensor", "remarks", "packages", "specs", "releases",
                  "change_logs", "availability", "biorepository", "all"]


class GetProductInput(ToolInput):
    product: str = Field(min_length=1, max_length=300, description="Code (revision optional) or name.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest.")
    include: list[Section] = Field([], max_length=12, description=(
        "Upstream sections to add (one request)."))
    change_logs_limit: int = Field(25, ge=1, le=200)
    change_logs_offset: int = Field(0, ge=0)
    availability_limit: int = Field(100, ge=1, le=300)
    availability_offset: int = Field(0, ge=0)
    text_budget: int = Field(4000, ge=100, le=20000, description="Characters per text section.")


class GetProductOutput(ProductRecord, Envelope):
    pass


def _product_steps(out: ProductRecord, resolved: dict[str, Any], args: GetProductInput) -> list[NextStep]:
    code = out.product_code
    steps = [NextStep(tool="eco_get_availability", arguments={"product": code}, why="Months of data per site.")]
    if out.availability_rows:
        steps.append(NextStep(tool="eco_get_site", arguments={"site": out.availability_rows[0].site_code},
                              why="Another product's view: what that site measures."))
    for key, pg in (("change_logs", out.change_logs_page), ("availability", out.availability_page)):
        if pg and pg.next_offset is not None:
            steps.append(NextStep(tool="eco_get_product", arguments={
                "product": code, "include": [key], f"{key}_offset": pg.next_offset,
                f"{key}_limit": getattr(args, f"{key}_limit"),
                **({"release": resolved["release"]["release"]} if args.release else {})},
                why=f"The next page of {key.replace('_', ' ')}."))
    if not args.include:
        steps.append(NextStep(tool="eco_get_product", arguments={"product": code, "include": ["abstract", "specs"]},
                              why="The abstract and the documents (one upstream request)."))
    return steps


# Catalog-only answers (no include, no release: the record, its resolution and next steps read
# off the index alone) for the same input on the same index: such an answer depends on nothing
# else, so the same object is returned again and the gateway reuses its dump and text
# (calls._finish) instead of validating, dumping and encoding the record every call. Inputs are
# kept per JSON text (mcp_gateway.arguments), so a repeated input is the same object. Only the
# latest index's answers are held.
_catalog_answers: KeptByIdentity[GetProductOutput] = KeptByIdentity(max_entries=256)


async def get_product_tool(args: GetProductInput, call: CallContext) -> GetProductOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    catalog_only = not args.include and args.release is None
    if catalog_only:
        kept = _catalog_answers.get(idx, args, cfg)
        if kept is not None:
            return kept
    out = await _product_answer(idx, args, cfg)
    if catalog_only and out.source.origin == "catalog" and keepable(args):
        _catalog_answers.put_latest(idx, args, cfg, value=returned_again(out))
    return out


async def _product_answer(idx: CatalogIndex, args: GetProductInput, cfg: EcoConfig) -> GetProductOutput:
    a = await product_detail(
        idx=idx, client=ports.upstream_client, base_url=cfg.eco.base_url, product=args.product,
        release=args.release, include=list(args.include), change_logs_limit=args.change_logs_limit,
        change_logs_offset=args.change_logs_offset, availability_limit=args.availability_limit,
        availability_offset=args.availability_offset, text_budget=args.text_budget,
    )
    origin = "upstream" if a.from_upstream else "catalog"
    # The record's fields by name (its __dict__: dict(record) walks pydantic's iterator).
    return GetProductOutput(**a.record.__dict__, resolved=a.resolved, notes=a.notes,
                            next_steps=_product_steps(a.record, a.resolved, args),
                            source=Source(origin=origin, api_base_url=cfg.eco.base_url))


TOOLS.append(
    ToolSpec(
        name="eco_get_product",
        title="Data product record",
        description=(
            "One data product from the cached catalog (status, team, themes, keywords, releases with DOIs, "
            "availability summary); include adds upstream sections (specs: its documents; change_logs and "
            "availability paged)."
        ),
        surface="discovery",
        input_model=GetProductInput,
        output_model=GetProductOutput,
        read=get_product_tool,
        endpoints=("POST /graphql", "GET /products/{productCode}"),
        page_lists={"changeLogs": "changeLogsPage", "availabilityRows": "availabilityPage"},
    )
)
