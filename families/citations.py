"""The citations family: eco_get_citation. Citation text and BibTeX for a data product in a
release, for its provisional data, or for a prototype dataset.

A product's citation comes from the catalogs alone (catalog.citation_text, which stacked datasets
cite with too). A prototype dataset costs one GET /prototype/datasets/{uuid} (cached per
ttl_s.prototype), worded the same way.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any, Literal

from pydantic import Field

from catalog import resolve
from catalog.access import catalog_index
from catalog.checks import bad, built
from catalog.citation_text import (
    AUTHOR,
    DATA_POLICY_URL,
    PROTOTYPE_PORTAL,
    PUBLISHER,
    bib_key,
    bibtex_entry,
    long_date,
    product_citation,
)
from catalog.index import CatalogIndex
from catalog.releases import bare_doi
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext

# The index with the release catalog built too.
NEED = ("products", "sites", "releases")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
CitationFormat = Literal["text", "bibtex", "all"]


class GetCitationInput(ToolInput):
    product: str | None = Field(None, max_length=300)
    prototype_uuid: str | None = Field(None, max_length=64, description="Cite a prototype dataset instead.")
    release: str = Field("latest", max_length=64, description=(
        "Tag, uuid or latest (the newest with a DOI for the product)."))
    provisional: bool = Field(False, description="Provisional form (no DOI, may change); not with a release.")
    format: CitationFormat = "all"
    accessed_on: str | None = Field(None, max_length=32, description="YYYY-MM-DD; default today (UTC).")
    site_codes: list[str] | None = Field(None, max_length=81, description="Sites named in the citation.")


class GetCitationOutput(Envelope):
    product_code: str | None
    prototype_uuid: str | None
    product_name: str | None
    project_title: str | None
    release: str | None
    provisional: bool
    doi: str | None
    doi_url: str | None
    accessed_on: str
    citation_text: str | None
    bibtex: str | None
    data_policy_url: str


async def get_citation(args: GetCitationInput, call: CallContext) -> GetCitationOutput:
    if (args.product is None) == (args.prototype_uuid is None):
        raise bad("product", "give exactly one of product or prototype_uuid")
    explicit = args.release.strip().lower() != "latest"
    if args.provisional and explicit:
        raise bad("provisional", "provisional data is in no release; give provisional=true or a release, not both")
    when = _accessed(args.accessed_on)
    if args.prototype_uuid is not None and (explicit or args.provisional):
        raise bad("release" if explicit else "provisional", "does not apply to a prototype dataset")
    idx = await catalog_index(call.cfg, call.client, need=NEED)
    resolved: dict[str, Any] = {}
    if args.prototype_uuid is not None:
        sites = _sites(idx, args.site_codes, resolved)
        return await _prototype_citation(args, args.prototype_uuid, when, sites, resolved, call)
    built(idx, "products")
    built(idx, "releases")
    sites = _sites(idx, args.site_codes, resolved)
    return _product_citation(idx, args, args.product or "", when, sites, resolved, call)


def _product_citation(idx: CatalogIndex, args: GetCitationInput, product: str, when: date, sites: list[str],
                      resolved: dict[str, Any], call: CallContext) -> GetCitationOutput:
    rp = resolve.resolve_product(product, index=idx)
    resolved["product"] = rp.echo()
    p = idx.by_code[rp.code]
    if p.first_month is None:
        # Neither a release nor provisional data holds a month of it: there is nothing to cite.
        raise EcoError("not_found", f"product: {p.code} ({p.status}) has no data yet; NEON has published no month "
                       "of it, so there is nothing to cite", details={"productStatus": p.status, "validReleases": []},
                       hint="eco_search_products with status ACTIVE finds products with data.")
    c = product_citation(idx, rp.code, release=args.release, provisional=args.provisional, sites=sites, when=when,
                         resolved=resolved)
    if c.release is None:
        step = NextStep(tool="eco_get_availability", arguments={"product": c.code},
                        why="Which months are provisional and which are released.")
    else:
        step = NextStep(tool="eco_get_release", arguments={"release": c.release, "product_code": c.code},
                        why=f"{c.release} and the product as published in it.")
    return GetCitationOutput(
        product_code=c.code, prototype_uuid=None, product_name=c.name, project_title=None, release=c.release,
        provisional=c.provisional, doi=c.doi, doi_url=c.doi_url, accessed_on=when.isoformat(),
        citation_text=_text(args, c.text), bibtex=_bib(args, c.bibtex), data_policy_url=DATA_POLICY_URL,
        resolved=resolved, notes=_with_license(c.notes), next_steps=[step],
        source=Source(origin="catalog", api_base_url=call.cfg.eco.base_url))


async def _prototype_citation(args: GetCitationInput, uuid: str, when: date, sites: list[str],
                              resolved: dict[str, Any], call: CallContext) -> GetCitationOutput:
    if not resolve.UUID.match(uuid.strip().lower()):
        raise bad("prototype_uuid", f"expected a uuid, got {uuid!r}")
    ds = await call.client.prototype_dataset(uuid.strip().lower())
    notes: list[str] = []
    url = ds.doi.url if ds.doi else None
    doi = bare_doi(url)
    doi_url = f"https://doi.org/{doi}" if doi else None
    version = f", version {ds.version}" if ds.version else ""
    where = f" (sites {', '.join(sites)})" if sites else ""
    accessed = f"Dataset accessed from {PROTOTYPE_PORTAL}/{ds.uuid}{where} on {long_date(when)}"
    text = f"{AUTHOR}. {ds.project_title}{version}. " + (f"{doi_url}. " if doi_url else "") + f"{accessed}."
    if not doi:
        notes.append("This prototype dataset has no DOI; the citation points at its portal page.")
    year = (ds.date_uploaded or "")[:4] if (ds.date_uploaded or "")[:4].isdigit() else str(when.year)
    fields = {"author": AUTHOR, "publisher": PUBLISHER, "title": ds.project_title + version, "year": year}
    if ds.version:
        fields["version"] = ds.version
    if doi:
        fields["doi"] = doi
    fields.update({"url": doi_url or f"{PROTOTYPE_PORTAL}/{ds.uuid}", "note": accessed, "urldate": when.isoformat()})
    bib = bibtex_entry(bib_key("NEON", "prototype", ds.uuid), fields)
    return GetCitationOutput(
        product_code=None, prototype_uuid=ds.uuid, product_name=None, project_title=ds.project_title, release=None,
        provisional=False, doi=doi, doi_url=doi_url, accessed_on=when.isoformat(),
        citation_text=_text(args, text), bibtex=_bib(args, bib), data_policy_url=DATA_POLICY_URL,
        resolved=resolved, notes=_with_license(notes),
        next_steps=[NextStep(tool="eco_get_prototype_dataset", arguments={"uuid": ds.uuid},
                             why="The dataset's files and description.")],
        source=Source(origin="upstream", endpoints=["GET /prototype/datasets/{uuid}"],
                      api_base_url=call.cfg.eco.base_url))


def _sites(idx: CatalogIndex, site_codes: list[str] | None, resolved: dict[str, Any]) -> list[str]:
    codes: list[str] = []
    for i, text in enumerate(site_codes or ()):
        rs = resolve.resolve_site(text, index=idx, field=f"site_codes[{i}]")
        if rs.code not in codes:
            codes.append(rs.code)
        resolved.setdefault("siteCodes", []).append(rs.echo())  # every resolution, a code's too
    return codes


def _accessed(value: str | None) -> date:
    if value is None:
        return datetime.now(UTC).date()
    if not ISO_DATE.match(value):
        raise bad("accessed_on", f"expected a date YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise bad("accessed_on", f"{value!r} is not a calendar date") from None


def _text(args: GetCitationInput, text: str) -> str | None:
    return None if args.format == "bibtex" else text


def _bib(args: GetCitationInput, bib: str) -> str | None:
    return None if args.format == "text" else bib


def _with_license(notes: list[str]) -> list[str]:
    return [*notes, f"NEON data are licensed CC BY 4.0; see {DATA_POLICY_URL}."]
