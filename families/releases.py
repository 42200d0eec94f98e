"""The releases family: eco_list_releases and eco_get_release. NEON's annual releases from the
release catalog, and one release's products (with DOIs), sites, manifests, or one product or site
as published in it.

The catalog's release rows keep everything but the signed artifact URLs (they expire in 7 days),
so listing and the products section cost no request. Opt-in parts ask the upstream:
    sites                one codes-only GraphQL query (`sites(release:)`); names from the site catalog.
                         With the GraphQL breaker open, or GraphQL failing, the site catalog's own
                         release lists answer instead (no request): REST's /sites?release= carries
                         every site's full product list and cannot answer within a call's deadline.
    artifact URLs        GET /releases (listing), GET /releases/{tag} (one release)
    product_code         GET /releases/{tag}/products/{code}
    site_code            GET /releases/{tag}/sites/{code}
The release-wide list endpoints (/releases/{tag}/products, /releases/{tag}/sites) are never called:
they carry every product's or site's full record.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from catalog import resolve
from catalog.access import catalog_index, catalog_read, catalog_source
from catalog.index import CatalogIndex, ReleaseEntry
from catalog.releases import bare_doi
from catalog.releases import list_releases as releases_in_catalog
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Page, Source, ToolInput, WireModel, page
from families.call import CallContext
from upstream import models as upstream_models
from upstream.client import UpstreamClient

# The index with the release catalog built too.
NEED = ("products", "sites", "releases")
SECTIONS = ("products", "sites", "artifacts")
# A codes-only selection: the names come from the site catalog, so the reply stays a few KB.
RELEASE_SITES_QUERY = "query ReleaseSites($release: String) { sites(release: $release) { siteCode } }"
GRAPHQL_FALLBACK_CODES = ("upstream_error", "upstream_unavailable", "graphql_error")


class Artifact(WireModel):
    name: str
    type: str
    size: int | None
    md5: str | None
    url: str | None


class ReleaseSummary(WireModel):
    release: str
    uuid: str | None
    generation_date: str | None
    product_count: int
    artifacts: list[Artifact]


class ReleaseProduct(WireModel):
    product_code: str
    product_name: str | None
    doi: str | None


class ReleaseSite(WireModel):
    site_code: str
    site_name: str | None
    domain_code: str | None


class ProductCore(WireModel):
    product_code: str
    product_name: str
    product_status: str
    doi: str | None
    site_count: int
    month_range: str | None


class SiteCore(WireModel):
    site_code: str
    site_name: str
    site_type: str
    state_code: str
    domain_code: str
    product_count: int



# -- eco_list_releases -------------------------------------------------------------------------

class ListReleasesInput(ToolInput):
    include_artifact_urls: bool = Field(False, description=(
        "Signed artifact URLs (cached: expire 7 days after NEON signs them)."))


class ListReleasesOutput(Envelope):
    items: list[ReleaseSummary] = Field(description="Newest first.")
    latest_release: str | None
    page: Page


async def list_releases(args: ListReleasesInput, call: CallContext) -> ListReleasesOutput:
    cfg = call.cfg
    idx = await catalog_index(cfg, call.client, need=NEED)
    items = await catalog_read(_release_summaries, idx)
    notes: list[str] = []
    src = catalog_source(cfg, [])
    if args.include_artifact_urls:
        items = await _with_artifact_urls(items, call.client)
        notes.append("Artifact URLs are signed and expire 7 days after generation.")
        src = Source(origin="mixed", endpoints=["GET /releases"], api_base_url=cfg.eco.base_url)
    else:
        notes.append("Artifact URLs are left out; include_artifact_urls=true adds them.")
    latest = items[0].release if items else None
    steps = [NextStep(tool="eco_get_release", arguments={"release": latest, "include": ["products", "sites"]},
                      why=f"Products with DOIs and sites in {latest}.")] if latest else []
    return ListReleasesOutput(items=items, latest_release=latest, page=page(0, len(items), len(items), len(items)),
                              resolved={}, notes=notes, next_steps=steps, source=src)


# -- eco_get_release ---------------------------------------------------------------------------

Section = Literal["products", "sites", "artifacts", "all"]


class GetReleaseInput(ToolInput):
    release: str = Field(min_length=1, max_length=64, description="Tag, uuid or latest.")
    # A plain default (pydantic copies it per instance) so the inputSchema states it: absent is not [].
    include: list[Section] = Field(["products"], max_length=4,
                                  description="[]: the compact base record.")
    product_query: str | None = Field(None, max_length=300)
    products_limit: int = Field(50, ge=1, le=500)
    products_offset: int = Field(0, ge=0)
    product_code: str | None = Field(None, max_length=300)
    site_code: str | None = Field(None, max_length=200)
    include_artifact_urls: bool = Field(False, description="Signed URLs, valid 7 days.")

    def sections(self) -> set[str]:
        if "all" in self.include:
            return set(SECTIONS)
        # Empty is the compact base record (the spec's convention); absent is the default, products.
        return set(self.include)


class GetReleaseOutput(Envelope):
    release: str
    uuid: str | None
    generation_date: str | None
    product_count: int
    artifacts: list[Artifact] | None
    data_products: list[ReleaseProduct] | None
    products_page: Page | None
    sites: list[ReleaseSite] | None
    product: ProductCore | None
    site: SiteCore | None


async def get_release(args: GetReleaseInput, call: CallContext) -> GetReleaseOutput:
    cfg, client = call.cfg, call.client
    idx = await catalog_index(cfg, client, need=NEED)
    rr = resolve.resolve_release(args.release, index=idx)
    resolved: dict[str, Any] = {"release": rr.echo()}
    entry = next((r for r in idx.releases if r.tag == rr.tag), None)
    if entry is None:
        # Known from product records only: the release catalog predates it.
        raise EcoError("not_found", f"release: {rr.tag} is not in the release catalog yet",
                       details={"validReleases": [r.tag for r in idx.releases]})
    wanted = args.sections()
    notes: list[str] = []
    asked = False
    artifacts = data_products = products_page = sites = product = site = None
    if "artifacts" in wanted or args.include_artifact_urls:
        artifacts = _artifacts(entry)
        if args.include_artifact_urls:
            artifacts = _signed(artifacts, await client.release(entry.tag))
            asked = True
            notes.append("Artifact URLs are signed and expire 7 days after generation.")
    if "products" in wanted:
        prods = _products(idx, entry, args.product_query)
        data_products = prods[args.products_offset:args.products_offset + args.products_limit]
        products_page = page(args.products_offset, args.products_limit, len(data_products), len(prods))
    if "sites" in wanted:
        codes = await _site_codes(idx, client, entry.tag, notes)
        asked = True
        sites = [ReleaseSite(site_code=c, site_name=s.name if s else None, domain_code=s.domain_code if s else None)
                 for c in codes for s in [idx.site_by_code.get(c)]]
    if args.product_code is not None:
        rp = resolve.resolve_product(args.product_code, index=idx, field="product_code")
        resolved["productCode"] = rp.echo()
        if rp.code not in entry.product_dois:
            raise EcoError("not_found", f"product_code: {rp.code} is not in {entry.tag}",
                           details={"validReleases": _releases_with_product(idx, rp.code)})
        product = _product_core(await client.release_product(entry.tag, rp.code), entry.tag)
        asked = True
    if args.site_code is not None:
        rs = resolve.resolve_site(args.site_code, index=idx, field="site_code")
        resolved["siteCode"] = rs.echo()
        site = _site_core(await client.release_site(entry.tag, rs.code))
        asked = True
    steps = _release_steps(entry.tag, product, data_products, products_page, args)
    return GetReleaseOutput(
        release=entry.tag, uuid=entry.uuid or None, generation_date=_iso(entry), product_count=entry.product_count,
        artifacts=artifacts, data_products=data_products, products_page=products_page, sites=sites,
        product=product, site=site, resolved=resolved, notes=notes, next_steps=steps,
        source=Source(origin="mixed" if asked else "catalog", api_base_url=cfg.eco.base_url))


def _release_steps(tag: str, product: ProductCore | None, data_products: list[ReleaseProduct] | None,
                   pg: Page | None, args: GetReleaseInput) -> list[NextStep]:
    steps: list[NextStep] = []
    code = product.product_code if product else (data_products[0].product_code if data_products else None)
    if code:
        steps.append(NextStep(tool="eco_get_citation", arguments={"product": code, "release": tag},
                              why=f"How to cite {code} from {tag}."))
    if pg and pg.next_offset is not None:
        more = args.model_dump(exclude_defaults=True)
        steps.append(NextStep(tool="eco_get_release", arguments={**more, "products_offset": pg.next_offset},
                              why="The next page of products."))
    return steps


# -- from the catalog's release rows and the upstream's release records -------------------------

def _iso(entry: ReleaseEntry) -> str | None:
    return entry.generation_date.isoformat().replace("+00:00", "Z") if entry.generation_date else None


def _artifacts(entry: ReleaseEntry) -> list[Artifact]:
    return [Artifact(name=a["name"], type=a["type"], size=a.get("size"), md5=a.get("md5"), url=None)
            for a in entry.artifacts]


def _summary(entry: ReleaseEntry) -> ReleaseSummary:
    return ReleaseSummary(release=entry.tag, uuid=entry.uuid or None, generation_date=_iso(entry),
                          product_count=entry.product_count, artifacts=_artifacts(entry))


def _release_summaries(idx: CatalogIndex) -> list[ReleaseSummary]:
    """Every release, newest first, artifacts without their signed URLs."""
    return [_summary(e) for e in reversed(releases_in_catalog(index=idx).releases)]


def _signed(artifacts: list[Artifact], record: upstream_models.Release) -> list[Artifact]:
    urls = {a.name: a.url for a in record.artifacts}
    known = [a.model_copy(update={"url": urls.get(a.name)}) for a in artifacts]
    names = {a.name for a in artifacts}
    return known + [Artifact(name=a.name, type=a.type, size=a.size, md5=a.md5, url=a.url)
                    for a in record.artifacts if a.name not in names]


async def _with_artifact_urls(summaries: list[ReleaseSummary], client: UpstreamClient) -> list[ReleaseSummary]:
    """The summaries with signed artifact URLs from one GET /releases (cached per ttl_s.releases)."""
    records = {r.release: r for r in await client.releases()}
    return [s.model_copy(update={"artifacts": _signed(s.artifacts, records[s.release])}) if s.release in records
            else s for s in summaries]


def _releases_with_product(idx: CatalogIndex, code: str) -> list[str]:
    """Tags of the releases whose record lists a DOI for `code`, oldest first."""
    return [r.tag for r in idx.releases if code in r.product_dois]


def _products(idx: CatalogIndex, entry: ReleaseEntry, query: str | None) -> list[ReleaseProduct]:
    q = (query or "").strip().lower()
    out = []
    for code in sorted(entry.product_dois.keys() | entry.product_names.keys()):
        p = idx.by_code.get(code)
        # The release record names the products GET /products no longer lists.
        name = p.name if p else entry.product_names.get(code)
        if q and q not in code.lower() and q not in (name or "").lower():
            continue
        out.append(ReleaseProduct(product_code=code, product_name=name, doi=bare_doi(entry.product_dois.get(code))))
    return out


async def _site_codes(idx: CatalogIndex, client: UpstreamClient, tag: str, notes: list[str]) -> list[str]:
    if client.graphql_available:
        try:
            data = await client.graphql(RELEASE_SITES_QUERY, {"release": tag}, model=upstream_models.GqlSitesData,
                                        operation_name="ReleaseSites", kind="detail")
            return sorted({s.site_code for s in data.sites})
        except EcoError as exc:
            if exc.code not in GRAPHQL_FALLBACK_CODES:
                raise
            notes.append(f"GraphQL failed ({exc.code}); the site list came from the site catalog.")
    else:
        notes.append("GraphQL is paused; the site list came from the site catalog.")
    return sorted(s.code for s in idx.sites if tag in s.releases)


def _product_core(rec: upstream_models.Product, tag: str) -> ProductCore:
    rel = next((r for r in rec.releases if r.release == tag), None)
    url = rel.product_doi.url if rel and rel.product_doi else None
    months = sorted(m for s in rec.site_codes for a in s.available_releases if a.release == tag
                    for m in a.available_months)
    return ProductCore(product_code=rec.product_code, product_name=rec.product_name,
                       product_status=rec.product_status, doi=bare_doi(url), site_count=len(rec.site_codes),
                       month_range=f"{months[0]}/{months[-1]}" if months else None)


def _site_core(rec: upstream_models.Site) -> SiteCore:
    return SiteCore(site_code=rec.site_code, site_name=rec.site_name, site_type=rec.site_type,
                    state_code=rec.state_code, domain_code=rec.domain_code, product_count=len(rec.data_products))


