"""eco_search_sites and eco_get_site: the 81 field sites, searched locally, and one site's record
(products with month ranges, releases, description, location)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.access import catalog_index
from catalog.checks import DOMAIN_PATTERN
from catalog.sites import SiteRecord, SiteSummary, search_sites, site_detail, with_elevations
from eco_core.paging import DefaultLimit
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec


class SearchSitesInput(ToolInput):
    query: str | None = Field(None, max_length=300, description="Code, name words, state or domain.")
    domain_code: str | None = Field(None, pattern=DOMAIN_PATTERN, description="D01-D20.")
    state_code: str | None = Field(None, pattern=r"^[A-Za-z]{2}$", description="Two-letter state code.")
    site_type: Literal["CORE", "GRADIENT"] | None = None
    product: str | None = Field(None, max_length=300, description="Product code or name: sites with data.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest.")
    latitude: float | None = Field(None, ge=-90, le=90)
    longitude: float | None = Field(None, ge=-180, le=180)
    radius_km: float = Field(100.0, gt=0, le=5000, description="Around latitude/longitude.")
    include_elevation: bool = Field(False, description="Add elevation and UTM (one extra cached request).")
    limit: DefaultLimit = Field(50, ge=1, le=100)
    offset: int = Field(0, ge=0)


class SearchSitesOutput(Envelope):
    items: list[SiteSummary]
    page: Page
    facets: dict[str, dict[str, int]] = Field(description="Counts per domain, state, siteType.")
    did_you_mean: list[str] | None
    index_source: Literal["graphql", "rest"] | None
    index_age_seconds: int | None


def _steps(args: SearchSitesInput, items: list[SiteSummary], pg: Page, product: str | None) -> list[NextStep]:
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


async def search_sites_tool(args: SearchSitesInput, call: CallContext) -> SearchSitesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    # In memory, on the loop: see eco_search_products.
    r = search_sites(
        query=args.query, domain_code=args.domain_code, state_code=args.state_code,
        site_type=args.site_type, product=args.product, release=args.release, latitude=args.latitude,
        longitude=args.longitude, radius_km=args.radius_km, limit=args.limit, offset=args.offset, index=idx)
    notes: list[str] = []
    source = Source(origin="catalog", api_base_url=cfg.eco.base_url)
    if args.include_elevation and r.items:
        elevated = await with_elevations(client=ports.upstream_client(), hits=r.items)
        items = elevated.items
        if elevated.note:
            notes.append(elevated.note)
        if elevated.from_upstream:
            source = Source(origin="mixed", endpoints=["/locations/sites"], api_base_url=cfg.eco.base_url)
    else:
        items = [h.summary() for h in r.items]
    if args.latitude is not None:
        notes.append(f"Sites within {args.radius_km:g} km of ({args.latitude}, {args.longitude}), nearest first.")
    product = (r.resolved.get("product") or {}).get("productCode")
    return SearchSitesOutput(
        items=items, page=r.page, facets=r.facets, did_you_mean=r.did_you_mean,
        index_source=r.index_source if r.index_source in ("graphql", "rest") else None,
        index_age_seconds=r.index_age_seconds, resolved=r.resolved, notes=notes,
        next_steps=_steps(args, items, r.page, product), source=source,
    )


TOOLS = [
    ToolSpec(
        name="eco_search_sites",
        title="Search field sites",
        description=(
            "Search NEON's 81 field sites (cached catalog) by code, name words, state or domain; filter by "
            "domain, state, site type, a product with data there, release; latitude/longitude gives the "
            "nearest sites within radius_km."
        ),
        surface="discovery",
        input_model=SearchSitesInput,
        output_model=SearchSitesOutput,
        read=search_sites_tool,
        endpoints=("POST /graphql", "GET /sites", "GET /locations/sites"),
    ),
]


# -- eco_get_site --------------------------------------------------------------------------

SiteSection = Literal["products", "releases", "description", "location", "all"]


class GetSiteInput(ToolInput):
    site: str = Field(min_length=1, max_length=200, description="Site code or name.")
    release: str | None = Field(None, max_length=64, description="RELEASE-YYYY or latest.")
    include: list[SiteSection] = Field(
        # A plain default (pydantic copies it per instance) so the inputSchema shows it.
        ["products"], max_length=5,
        description="Sections to return.")
    products_query: str | None = Field(None, max_length=200, description="Code or title contains this.")
    products_limit: int = Field(100, ge=1, le=300)
    products_offset: int = Field(0, ge=0)


class GetSiteOutput(SiteRecord, Envelope):
    pass


def _site_steps(out: SiteRecord, args: GetSiteInput) -> list[NextStep]:
    code = out.site_code
    steps = [NextStep(tool="eco_get_availability", arguments={"site": code}, why="Months per product at this site.")]
    if out.data_products:
        top = out.data_products[0].product_code
        steps.append(NextStep(tool="eco_get_availability", arguments={"product": top, "site": code},
                              why=f"Every month of {top} here."))
    pg = out.data_products_page
    if pg and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_site", arguments={**more, "products_offset": pg.next_offset},
                              why="The next page of products."))
    return steps


async def get_site_tool(args: GetSiteInput, call: CallContext) -> GetSiteOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client)
    a = await site_detail(
        idx=idx, client=ports.upstream_client(), base_url=cfg.eco.base_url, site=args.site, release=args.release,
        include=list(args.include), products_query=args.products_query, products_limit=args.products_limit,
        products_offset=args.products_offset, text_budget=cfg.limits.text_budget_detail,
    )
    origin = "upstream" if a.from_upstream else "catalog"
    return GetSiteOutput(**dict(a.record), resolved=a.resolved, notes=a.notes, next_steps=_site_steps(a.record, args),
                         source=Source(origin=origin, api_base_url=cfg.eco.base_url))


TOOLS.append(
    ToolSpec(
        name="eco_get_site",
        title="Field site record",
        description=(
            "One field site by code or name: type, state, domain, coordinates, product count, latest release; "
            "sections: products (month ranges, paged), releases, description, location (elevation, UTM; one "
            "cached request)."
        ),
        surface="discovery",
        input_model=GetSiteInput,
        output_model=GetSiteOutput,
        read=get_site_tool,
        endpoints=("GET /sites/{siteCode}", "GET /locations/{locationName}"),
        page_lists={"dataProducts": "dataProductsPage"},
    )
)
