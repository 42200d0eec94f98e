"""The releases family's reads (eco_list_releases, eco_get_release), the release info that
product records carry, and the wire types of their answers.

    list_releases(index=) -> ReleaseList(releases: [ReleaseEntry], latest)     oldest first
    release_summaries(idx) -> [ReleaseSummary]                                 newest first, no URLs
    await with_artifact_urls(summaries, client=)                               one GET /releases (cached)
    await release_detail(idx=, client=, release=, include=, ...) -> Answer[ReleaseRecord]

The catalog's release rows keep everything but the signed artifact URLs (they expire in 7 days),
so listing and the products section cost no request. Opt-in parts ask the upstream:
    sites                one codes-only GraphQL query (`sites(release:)`); names from the site catalog.
                         With the GraphQL breaker open, or GraphQL failing, the site catalog's own
                         release lists answer instead (no request): REST's /sites?release= carries
                         every site's full product list and cannot answer within a call's deadline.
    artifact URLs        GET /releases/{tag}
    product_code         GET /releases/{tag}/products/{code}
    site_code            GET /releases/{tag}/sites/{code}
The release-wide list endpoints (/releases/{tag}/products, /releases/{tag}/sites) are never called:
they carry every product's or site's full record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from catalog import checks, resolve
from catalog.checks import built
from catalog.index import CatalogIndex, ReleaseEntry, get_index
from eco_core.errors import EcoError
from eco_core.wire import Answer, Page, WireModel, page

if TYPE_CHECKING:
    from upstream import models as upstream_models
    from upstream.client import UpstreamClient

SECTIONS = ("products", "sites", "artifacts")
DOI_PREFIX = "https://doi.org/"
# A codes-only selection: the names come from the site catalog, so the reply stays a few KB.
RELEASE_SITES_QUERY = "query ReleaseSites($release: String) { sites(release: $release) { siteCode } }"
GRAPHQL_FALLBACK_CODES = ("upstream_error", "upstream_unavailable", "graphql_error")


class ReleaseInfo(WireModel):
    release: str
    generation_date: str | None
    doi: str | None
    doi_generation_date: str | None


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


class ReleaseRecord(WireModel):
    """eco_get_release's answer without the envelope."""

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


@dataclass(frozen=True)
class ReleaseList:
    releases: list[ReleaseEntry]
    latest: str | None


def list_releases(*, index: CatalogIndex | None = None) -> ReleaseList:
    """Every release in the catalog and the newest tag; catalog_unavailable before the first build."""
    idx = index or get_index()
    built(idx, "releases")
    return ReleaseList(list(idx.releases), max((r.tag for r in idx.releases), default=None))


def bare_doi(url: str | None) -> str | None:
    if not url:
        return None
    return url[len(DOI_PREFIX):] if url.startswith(DOI_PREFIX) else url


def _iso(entry: ReleaseEntry) -> str | None:
    return entry.generation_date.isoformat().replace("+00:00", "Z") if entry.generation_date else None


def _artifacts(entry: ReleaseEntry) -> list[Artifact]:
    return [Artifact(name=a["name"], type=a["type"], size=a.get("size"), md5=a.get("md5"), url=None)
            for a in entry.artifacts]


def _summary(entry: ReleaseEntry) -> ReleaseSummary:
    return ReleaseSummary(release=entry.tag, uuid=entry.uuid or None, generation_date=_iso(entry),
                          product_count=entry.product_count, artifacts=_artifacts(entry))


def release_summaries(idx: CatalogIndex) -> list[ReleaseSummary]:
    """Every release, newest first, artifacts without their signed URLs."""
    return [_summary(e) for e in reversed(list_releases(index=idx).releases)]


def _signed(artifacts: list[Artifact], record: upstream_models.Release) -> list[Artifact]:
    urls = {a.name: a.url for a in record.artifacts}
    known = [a.model_copy(update={"url": urls.get(a.name)}) for a in artifacts]
    names = {a.name for a in artifacts}
    return known + [Artifact(name=a.name, type=a.type, size=a.size, md5=a.md5, url=a.url)
                    for a in record.artifacts if a.name not in names]


async def with_artifact_urls(summaries: list[ReleaseSummary], *, client: UpstreamClient) -> list[ReleaseSummary]:
    """The summaries with signed artifact URLs from one GET /releases (cached per ttl_s.releases)."""
    records = {r.release: r for r in await client.releases()}
    return [s.model_copy(update={"artifacts": _signed(s.artifacts, records[s.release])}) if s.release in records
            else s for s in summaries]


def releases_with_product(idx: CatalogIndex, code: str) -> list[str]:
    """Tags of the releases whose record lists a DOI for `code`, oldest first."""
    return [r.tag for r in idx.releases if code in r.product_dois]


def _products(idx: CatalogIndex, entry: ReleaseEntry, query: str | None) -> list[ReleaseProduct]:
    q = (query or "").strip().lower()
    out = []
    for code, url in sorted(entry.product_dois.items()):
        p = idx.by_code.get(code)
        name = p.name if p else None
        if q and q not in code.lower() and q not in (name or "").lower():
            continue
        out.append(ReleaseProduct(product_code=code, product_name=name, doi=bare_doi(url)))
    return out


async def _site_codes(idx: CatalogIndex, client: UpstreamClient, tag: str, notes: list[str]) -> list[str]:
    from upstream import models as m

    if client.graphql_available:
        try:
            data = await client.graphql(RELEASE_SITES_QUERY, {"release": tag}, model=m.GqlSitesData,
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


def sections_of(include: list[str]) -> set[str]:
    if "all" in include:
        return set(SECTIONS)
    return set(include) if include else {"products"}


async def release_detail(
    *, idx: CatalogIndex, client: UpstreamClient, release: str, include: list[str],
    product_query: str | None = None, products_limit: int = 50, products_offset: int = 0,
    product_code: str | None = None, site_code: str | None = None, include_artifact_urls: bool = False,
) -> Answer[ReleaseRecord]:
    checks.paging(products_limit, products_offset, 500)
    built(idx, "releases")
    rr = resolve.resolve_release(release, index=idx)
    resolved: dict[str, Any] = {"release": rr.echo()}
    entry = next((r for r in idx.releases if r.tag == rr.tag), None)
    if entry is None:
        # Known from product records only: the release catalog predates it.
        raise EcoError("not_found", f"release: {rr.tag} is not in the release catalog yet",
                       details={"validReleases": [r.tag for r in idx.releases]})
    wanted = sections_of(include)
    notes: list[str] = []
    asked = False
    out: dict[str, Any] = {
        "release": entry.tag, "uuid": entry.uuid or None, "generation_date": _iso(entry),
        "product_count": entry.product_count, "artifacts": None, "data_products": None, "products_page": None,
        "sites": None, "product": None, "site": None,
    }
    if "artifacts" in wanted or include_artifact_urls:
        arts = _artifacts(entry)
        if include_artifact_urls:
            arts = _signed(arts, await client.release(entry.tag))
            asked = True
            notes.append("Artifact URLs are signed and expire 7 days after generation.")
        out["artifacts"] = arts
    if "products" in wanted:
        prods = _products(idx, entry, product_query)
        shown = prods[products_offset:products_offset + products_limit]
        out["data_products"] = shown
        out["products_page"] = page(products_offset, products_limit, len(shown), len(prods))
    if "sites" in wanted:
        codes = await _site_codes(idx, client, entry.tag, notes)
        asked = True
        out["sites"] = [ReleaseSite(site_code=c, site_name=s.name if s else None,
                                    domain_code=s.domain_code if s else None)
                        for c in codes for s in [idx.site_by_code.get(c)]]
    if product_code is not None:
        rp = resolve.resolve_product(product_code, index=idx, field="product_code")
        resolved["productCode"] = rp.echo()
        if rp.code not in entry.product_dois:
            raise EcoError("not_found", f"product_code: {rp.code} is not in {entry.tag}",
                           details={"validReleases": releases_with_product(idx, rp.code)})
        out["product"] = _product_core(await client.release_product(entry.tag, rp.code), entry.tag)
        asked = True
    if site_code is not None:
        rs = resolve.resolve_site(site_code, index=idx, field="site_code")
        resolved["siteCode"] = rs.echo()
        out["site"] = _site_core(await client.release_site(entry.tag, rs.code))
        asked = True
    return Answer(ReleaseRecord(**out), resolved=resolved, notes=notes, from_upstream=asked)
