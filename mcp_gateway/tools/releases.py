"""eco_list_releases and eco_get_release: NEON's annual releases from the release catalog, and one
release's products (with DOIs), sites, manifests, or one product or site as published in it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from catalog.access import catalog_index, catalog_read, catalog_source
from catalog.releases import ReleaseRecord, ReleaseSummary, release_detail, release_summaries, with_artifact_urls
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, page
from families.call import CallContext
from mcp_gateway import ports
from mcp_gateway.registry import ToolSpec

RELEASES = ("products", "sites", "releases")


class ListReleasesInput(ToolInput):
    include_artifact_urls: bool = Field(False, description=(
        "Add signed manifest URLs (large; expire in 7 days; one upstream request)."))


class ListReleasesOutput(Envelope):
    items: list[ReleaseSummary] = Field(description="Newest first.")
    latest_release: str | None
    page: Page


async def list_releases_tool(args: ListReleasesInput, call: CallContext) -> ListReleasesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client, need=RELEASES)
    items = await catalog_read(release_summaries, idx)
    notes: list[str] = []
    endpoints: list[str] = []
    if args.include_artifact_urls:
        items = await with_artifact_urls(items, client=ports.upstream_client())
        notes.append("Artifact URLs are signed and expire 7 days after generation.")
        endpoints.append("GET /releases")
    else:
        notes.append("Artifact URLs are left out; include_artifact_urls=true adds them.")
    latest = items[0].release if items else None
    steps = [NextStep(tool="eco_get_release", arguments={"release": latest, "include": ["products", "sites"]},
                      why=f"Products with DOIs and sites in {latest}.")] if latest else []
    src = catalog_source(cfg, endpoints)
    if endpoints:
        src = Source(origin="mixed", endpoints=endpoints, api_base_url=cfg.eco.base_url)
    return ListReleasesOutput(items=items, latest_release=latest, page=page(0, len(items), len(items), len(items)),
                              resolved={}, notes=notes, next_steps=steps, source=src)


TOOLS = [
    ToolSpec(
        name="eco_list_releases",
        title="List data releases",
        description=(
            "NEON's annual data releases (RELEASE-YYYY), newest first, from the cached release catalog (no "
            "upstream request): generation date, product count, manifest artifacts, and the latest tag. Data "
            "newer than the latest release is PROVISIONAL, which is not a release."
        ),
        surface="discovery",
        input_model=ListReleasesInput,
        output_model=ListReleasesOutput,
        read=list_releases_tool,
        endpoints=("GET /releases",),
    ),
]


# -- eco_get_release -----------------------------------------------------------------------

Section = Literal["products", "sites", "artifacts", "all"]


def _products_only() -> list[Section]:
    return ["products"]


class GetReleaseInput(ToolInput):
    release: str = Field(min_length=1, max_length=64, description="RELEASE-YYYY, a release uuid, or latest.")
    include: list[Section] = Field(default_factory=_products_only, max_length=4)
    product_query: str | None = Field(None, max_length=300)
    products_limit: int = Field(50, ge=1, le=500)
    products_offset: int = Field(0, ge=0)
    product_code: str | None = Field(None, max_length=300)
    site_code: str | None = Field(None, max_length=200)
    include_artifact_urls: bool = Field(False, description="Signed URLs, valid 7 days.")


class GetReleaseOutput(ReleaseRecord, Envelope):
    pass


def _release_steps(out: ReleaseRecord, args: GetReleaseInput) -> list[NextStep]:
    steps: list[NextStep] = []
    code = out.product.product_code if out.product else (out.data_products[0].product_code
                                                           if out.data_products else None)
    if code:
        steps.append(NextStep(tool="eco_get_citation", arguments={"product": code, "release": out.release},
                              why=f"How to cite {code} from {out.release}."))
    pg = out.products_page
    if pg and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_release", arguments={**more, "products_offset": pg.next_offset},
                              why="The next page of products."))
    return steps


async def get_release_tool(args: GetReleaseInput, call: CallContext) -> GetReleaseOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client, need=RELEASES)
    a = await release_detail(
        idx=idx, client=ports.upstream_client(), release=args.release, include=list(args.include),
        product_query=args.product_query, products_limit=args.products_limit, products_offset=args.products_offset,
        product_code=args.product_code, site_code=args.site_code, include_artifact_urls=args.include_artifact_urls,
    )
    origin = "mixed" if a.from_upstream else "catalog"
    return GetReleaseOutput(**dict(a.record), resolved=a.resolved, notes=a.notes,
                            next_steps=_release_steps(a.record, args),
                            source=Source(origin=origin, api_base_url=cfg.eco.base_url))


TOOLS.append(
    ToolSpec(
        name="eco_get_release",
        title="Data release record",
        description=(
            "One release (tag, uuid or latest). include: products (default; codes, names, DOIs, paged, "
            "filtered by product_query), sites (one upstream query), artifacts, all. product_code / site_code "
            "add that product or site as published in the release."
        ),
        surface="discovery",
        input_model=GetReleaseInput,
        output_model=GetReleaseOutput,
        read=get_release_tool,
        endpoints=("GET /releases/{releaseIdentifier}", "POST /graphql", "GET /releases/{releaseTag}/products/{productCode}",
                   "GET /releases/{releaseTag}/sites/{siteCode}"),
        page_lists={"dataProducts": "productsPage"},
    )
)
