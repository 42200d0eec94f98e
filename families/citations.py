"""The citations family: eco_get_citation. Citation text and BibTeX for a data product in a
release, for its provisional data, or for a prototype dataset.

A product's citation comes from the catalogs alone (no request): the DOI from the product record's
release list, cross-checked against the release record's DOI list; a disagreement is a note (the
product record's DOI is cited, both are shown). release latest means the newest release whose
product record carries a DOI. A prototype dataset costs one GET /prototype/datasets/{uuid}
(cached per ttl_s.prototype).

Wording follows NEON's data policy (CC BY 4.0) and citation guidelines:
    NEON (National Ecological Observatory Network). <name> (<code>), <release>. https://doi.org/<doi>.
    Dataset accessed from <portal> on <Month D, YYYY>.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any, Literal

from pydantic import Field

from catalog import resolve
from catalog.access import catalog_index
from catalog.checks import bad, built
from catalog.index import CatalogIndex, ProductEntry
from catalog.releases import bare_doi
from eco_core.errors import EcoError
from eco_core.wire import Envelope, NextStep, Source, ToolInput
from families.call import CallContext

# The index with the release catalog built too.
NEED = ("products", "sites", "releases")
DATA_POLICY_URL = "https://www.neonscience.org/data-samples/data-policies-citation"
AUTHOR = "NEON (National Ecological Observatory Network)"
PUBLISHER = "National Ecological Observatory Network (NEON)"
PORTAL = "https://data.neonscience.org/data-products"
PROTOTYPE_PORTAL = "https://data.neonscience.org/prototype-datasets"
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# BibTeX's special characters, and what stands for each inside a braced field.
_BIB_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$",
                "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
CitationFormat = Literal["text", "bibtex", "all"]


class GetCitationInput(ToolInput):
    product: str | None = Field(None, max_length=300, description="Product code or name.")
    prototype_uuid: str | None = Field(None, max_length=64, description="Cite a prototype dataset instead.")
    release: str = Field("latest", max_length=64, description=(
        "RELEASE-YYYY, a uuid, or latest: the newest release with a DOI for the product."))
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
    notes: list[str] = []
    where = f" (sites {', '.join(sites)})" if sites else ""
    accessed = f"Dataset accessed from {PORTAL}/{p.code}"
    fields = {"author": AUTHOR, "publisher": PUBLISHER}
    if args.provisional:
        text = (f"{AUTHOR}. {p.name} ({p.code}), provisional data. {accessed}{where} on {_long_date(when)}. "
                "Provisional data are not in a release and may change.")
        notes.append("Provisional data may change and have no DOI; cite a release for reproducible work.")
        if "PROVISIONAL" not in p.by_release:
            notes.append(f"{p.code} has no provisional months now; every month with data is in a release.")
        fields.update({"title": f"{p.name} ({p.code}), provisional data", "year": str(when.year),
                       "url": f"{PORTAL}/{p.code}",
                       "note": f"Provisional data, subject to change. {accessed}{where} on {_long_date(when)}",
                       "urldate": when.isoformat()})
        bib = bibtex_entry(_bib_key("NEON", p.code, "PROVISIONAL", when.isoformat()), fields)
        return GetCitationOutput(
            product_code=p.code, prototype_uuid=None, product_name=p.name, project_title=None, release=None,
            provisional=True, doi=None, doi_url=None, accessed_on=when.isoformat(),
            citation_text=_text(args, text), bibtex=_bib(args, bib), data_policy_url=DATA_POLICY_URL,
            resolved=resolved, notes=_with_license(notes),
            next_steps=[NextStep(tool="eco_get_availability", arguments={"product": p.code},
                                 why="Which months are provisional and which are released.")],
            source=Source(origin="catalog", api_base_url=call.cfg.eco.base_url))
    tag, url = _pick_release(idx, p, args.release, resolved, notes)
    entry = next((r for r in idx.releases if r.tag == tag), None)
    listed = entry.product_dois.get(p.code) if entry else None
    if entry is None:
        notes.append(f"DOI not cross-checked: {tag} is not in the release catalog yet.")
    elif listed is None:
        notes.append(f"DOI cross-check: the {tag} release record does not list {p.code}; "
                     f"verify {url} before publishing.")
    elif bare_doi(listed) != bare_doi(url):
        notes.append(f"DOI mismatch: the product record gives {bare_doi(url)} but the {tag} release record "
                     f"gives {bare_doi(listed)}; the product record's DOI is cited, check both at doi.org.")
    doi = bare_doi(url) or ""
    doi_url = f"https://doi.org/{doi}"
    accessed = f"Dataset accessed from {PORTAL}/{p.code}/{tag}"
    text = f"{AUTHOR}. {p.name} ({p.code}), {tag}. {doi_url}. {accessed}{where} on {_long_date(when)}."
    fields.update({"title": f"{p.name} ({p.code}), {tag}", "year": tag[-4:], "version": tag, "doi": doi,
                   "url": doi_url, "note": f"{accessed}{where} on {_long_date(when)}", "urldate": when.isoformat()})
    bib = bibtex_entry(_bib_key("NEON", p.code, tag), fields)
    return GetCitationOutput(
        product_code=p.code, prototype_uuid=None, product_name=p.name, project_title=None, release=tag,
        provisional=False, doi=doi, doi_url=doi_url, accessed_on=when.isoformat(),
        citation_text=_text(args, text), bibtex=_bib(args, bib), data_policy_url=DATA_POLICY_URL,
        resolved=resolved, notes=_with_license(notes),
        next_steps=[NextStep(tool="eco_get_release", arguments={"release": tag, "product_code": p.code},
                             why=f"{tag} and the product as published in it.")],
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
    accessed = f"Dataset accessed from {PROTOTYPE_PORTAL}/{ds.uuid}{where} on {_long_date(when)}"
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
    bib = bibtex_entry(_bib_key("NEON", "prototype", ds.uuid), fields)
    return GetCitationOutput(
        product_code=None, prototype_uuid=ds.uuid, product_name=None, project_title=ds.project_title, release=None,
        provisional=False, doi=doi, doi_url=doi_url, accessed_on=when.isoformat(),
        citation_text=_text(args, text), bibtex=_bib(args, bib), data_policy_url=DATA_POLICY_URL,
        resolved=resolved, notes=_with_license(notes),
        next_steps=[NextStep(tool="eco_get_prototype_dataset", arguments={"uuid": ds.uuid},
                             why="The dataset's files and description.")],
        source=Source(origin="upstream", endpoints=["GET /prototype/datasets/{uuid}"],
                      api_base_url=call.cfg.eco.base_url))


def _pick_release(idx: CatalogIndex, p: ProductEntry, release: str, resolved: dict[str, Any],
                  notes: list[str]) -> tuple[str, str]:
    """The release cited and the product record's DOI URL in it."""
    dois = {r["release"]: r["doi"] for r in p.releases if r.get("doi")}
    if release.strip().lower() == "latest":
        if not dois:
            raise EcoError("not_found", f"product: {p.code} is in no release yet (all its data is provisional); "
                           "call again with provisional=true", details={"validReleases": []})
        tag = max(dois)
        resolved["release"] = {"input": release, "release": tag, "matchedBy": "latest"}
        newest = max((r.tag for r in idx.releases), default=tag)
        if newest != tag:
            notes.append(f"{newest} does not carry {p.code}; cited its newest release with a DOI, {tag}.")
        return tag, dois[tag]
    rr = resolve.resolve_release(release, index=idx)
    resolved["release"] = rr.echo()
    if rr.tag not in dois:
        raise EcoError("not_found", f"release: {p.code} is not in {rr.tag}",
                       details={"validReleases": sorted(dois)})
    return rr.tag, dois[rr.tag]


def _sites(idx: CatalogIndex, site_codes: list[str] | None, resolved: dict[str, Any]) -> list[str]:
    codes: list[str] = []
    for i, text in enumerate(site_codes or ()):
        rs = resolve.resolve_site(text, index=idx, field=f"site_codes[{i}]")
        if rs.code not in codes:
            codes.append(rs.code)
        if rs.matched_by != "code":
            resolved.setdefault("siteCodes", []).append(rs.echo())
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


def _long_date(d: date) -> str:
    return f"{d.strftime('%B')} {d.day}, {d.year}"


def _text(args: GetCitationInput, text: str) -> str | None:
    return None if args.format == "bibtex" else text


def _bib(args: GetCitationInput, bib: str) -> str | None:
    return None if args.format == "text" else bib


def _with_license(notes: list[str]) -> list[str]:
    return [*notes, f"NEON data are licensed CC BY 4.0; see {DATA_POLICY_URL}."]


# -- BibTeX ----------------------------------------------------------------------------------

def bib_escape(text: str) -> str:
    return "".join(_BIB_ESCAPES.get(ch, ch) for ch in text)


def _bib_key(*parts: str) -> str:
    # Letters, digits, '-', '.' and ':' only: every BibTeX tool accepts these in a key.
    return ":".join(re.sub(r"[^A-Za-z0-9.\-]", "-", p) for p in parts)


def bibtex_entry(key: str, fields: dict[str, str]) -> str:
    """An @misc entry; every value braced and escaped, except `url`, which stays verbatim (the
    url package reads it raw) and so must not contain braces."""
    lines = [f"@misc{{{key},"]
    for name, value in fields.items():
        text = value.replace("{", "%7B").replace("}", "%7D") if name == "url" else bib_escape(value)
        lines.append(f"  {name} = {{{text}}},")
    lines.append("}")
    return "\n".join(lines)
