"""The citations family's read (eco_get_citation): citation text and BibTeX for a data product in
a release, for its provisional data, or for a prototype dataset.

    await citation(idx=, client=, product=, prototype_uuid=, release=, provisional=, fmt=,
                   accessed_on=, site_codes=) -> Answer[CitationRecord]

A product's citation comes from the catalogs alone (no request): the DOI from the product record's
release list, cross-checked against the release record's DOI list; a disagreement is a note (the
product record's DOI is cited, both are shown). `release` None or latest means the newest release
whose product record carries a DOI. A prototype dataset costs one GET /prototype/datasets/{uuid}
(cached per ttl_s.prototype).

Wording follows NEON's data policy (CC BY 4.0) and citation guidelines:
    NEON (National Ecological Observatory Network). <name> (<code>), <release>. https://doi.org/<doi>.
    Dataset accessed from <portal> on <Month D, YYYY>.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from catalog import resolve
from catalog.checks import bad, built
from catalog.index import CatalogIndex, ProductEntry
from catalog.releases import bare_doi
from eco_core.errors import EcoError
from eco_core.wire import Answer, WireModel

if TYPE_CHECKING:
    from upstream.client import UpstreamClient

DATA_POLICY_URL = "https://www.neonscience.org/data-samples/data-policies-citation"
AUTHOR = "NEON (National Ecological Observatory Network)"
PUBLISHER = "National Ecological Observatory Network (NEON)"
PORTAL = "https://data.neonscience.org/data-products"
PROTOTYPE_PORTAL = "https://data.neonscience.org/prototype-datasets"
FORMATS = ("text", "bibtex", "all")
MAX_SITES = 81
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# BibTeX's special characters, and what stands for each inside a braced field.
_BIB_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$",
                "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


class CitationRecord(WireModel):
    """eco_get_citation's answer without the envelope."""

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


def _sites(idx: CatalogIndex, site_codes: list[str] | None, resolved: dict[str, Any]) -> list[str]:
    if not site_codes:
        return []
    if len(site_codes) > MAX_SITES:
        raise bad("site_codes", f"at most {MAX_SITES} sites")
    codes: list[str] = []
    for i, text in enumerate(site_codes):
        rs = resolve.resolve_site(text, index=idx, field=f"site_codes[{i}]")
        if rs.code not in codes:
            codes.append(rs.code)
        if rs.matched_by != "code":
            resolved.setdefault("siteCodes", []).append(rs.echo())
    return codes


def _record(**kw: Any) -> CitationRecord:
    base: dict[str, Any] = {"product_code": None, "prototype_uuid": None, "product_name": None,
                            "project_title": None, "release": None, "provisional": False, "doi": None,
                            "doi_url": None, "citation_text": None, "bibtex": None,
                            "data_policy_url": DATA_POLICY_URL}
    base.update(kw)
    return CitationRecord(**base)


def _pick_release(idx: CatalogIndex, p: ProductEntry, release: str | None, resolved: dict[str, Any],
                  notes: list[str]) -> tuple[str, str]:
    """The release cited and the product record's DOI URL in it."""
    dois = {r["release"]: r["doi"] for r in p.releases if r.get("doi")}
    if release is None or release.strip().lower() == "latest":
        if not dois:
            raise EcoError("not_found", f"product: {p.code} is in no release yet (all its data is provisional); "
                           "call again with provisional=true", details={"validReleases": []})
        tag = max(dois)
        resolved["release"] = {"input": release or "latest", "release": tag, "matchedBy": "latest"}
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


def _product_citation(idx: CatalogIndex, product: str, release: str | None, provisional: bool, when: date,
                      sites: list[str], resolved: dict[str, Any], notes: list[str]) -> CitationRecord:
    rp = resolve.resolve_product(product, index=idx)
    resolved["product"] = rp.echo()
    p = idx.by_code[rp.code]
    where = f" (sites {', '.join(sites)})" if sites else ""
    accessed = f"Dataset accessed from {PORTAL}/{p.code}"
    fields = {"author": AUTHOR, "publisher": PUBLISHER}
    if provisional:
        text = (f"{AUTHOR}. {p.name} ({p.code}), provisional data. {accessed}{where} on {_long_date(when)}. "
                "Provisional data are not in a release and may change.")
        notes.append("Provisional data may change and have no DOI; cite a release for reproducible work.")
        if "PROVISIONAL" not in p.by_release:
            notes.append(f"{p.code} has no provisional months now; every month with data is in a release.")
        fields.update({"title": f"{p.name} ({p.code}), provisional data", "year": str(when.year),
                       "url": f"{PORTAL}/{p.code}",
                       "note": f"Provisional data, subject to change. {accessed}{where} on {_long_date(when)}",
                       "urldate": when.isoformat()})
        return _record(product_code=p.code, product_name=p.name, provisional=True, accessed_on=when.isoformat(),
                       citation_text=text, bibtex=bibtex_entry(_bib_key("NEON", p.code, "PROVISIONAL",
                                                                        when.isoformat()), fields))
    tag, url = _pick_release(idx, p, release, resolved, notes)
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
    return _record(product_code=p.code, product_name=p.name, release=tag, doi=doi, doi_url=doi_url,
                   accessed_on=when.isoformat(), citation_text=text,
                   bibtex=bibtex_entry(_bib_key("NEON", p.code, tag), fields))


async def _prototype_citation(client: UpstreamClient, uuid: str, when: date, sites: list[str],
                              notes: list[str]) -> CitationRecord:
    if not resolve.UUID.match(uuid.strip().lower()):
        raise bad("prototype_uuid", f"expected a uuid, got {uuid!r}")
    ds = await client.prototype_dataset(uuid.strip().lower())
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
    return _record(prototype_uuid=ds.uuid, project_title=ds.project_title, doi=doi, doi_url=doi_url,
                   accessed_on=when.isoformat(), citation_text=text,
                   bibtex=bibtex_entry(_bib_key("NEON", "prototype", ds.uuid), fields))


async def citation(
    *, idx: CatalogIndex, client: UpstreamClient, product: str | None = None, prototype_uuid: str | None = None,
    release: str | None = None, provisional: bool = False, fmt: str = "all", accessed_on: str | None = None,
    site_codes: list[str] | None = None,
) -> Answer[CitationRecord]:
    if (product is None) == (prototype_uuid is None):
        raise bad("product", "give exactly one of product or prototype_uuid")
    if fmt not in FORMATS:
        raise bad("format", f"must be one of {', '.join(FORMATS)}")
    explicit = release is not None and release.strip().lower() != "latest"
    if provisional and explicit:
        raise bad("provisional", "provisional data is in no release; give provisional=true or a release, not both")
    when = _accessed(accessed_on)
    resolved: dict[str, Any] = {}
    notes: list[str] = []
    if prototype_uuid is not None:
        if explicit or provisional:
            raise bad("release" if explicit else "provisional", "does not apply to a prototype dataset")
        sites = _sites(idx, site_codes, resolved) if site_codes else []
        rec = await _prototype_citation(client, prototype_uuid, when, sites, notes)
        asked = True
    else:
        built(idx, "products")
        built(idx, "releases")
        sites = _sites(idx, site_codes, resolved)
        rec = _product_citation(idx, product or "", release, provisional, when, sites, resolved, notes)
        asked = False
    if fmt == "text":
        rec = rec.model_copy(update={"bibtex": None})
    elif fmt == "bibtex":
        rec = rec.model_copy(update={"citation_text": None})
    notes.append(f"NEON data are licensed CC BY 4.0; see {DATA_POLICY_URL}.")
    return Answer(rec, resolved=resolved, notes=notes, from_upstream=asked)
