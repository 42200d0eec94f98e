"""How NEON data are cited: the citation text and BibTeX of a data product in a release or of its
provisional data, from the catalogs alone (no request), and the BibTeX writing every citation
shares. The citations family answers eco_get_citation with it; stacked datasets record it.

The DOI comes from the product record's release list, cross-checked against the release record's
DOI list; a disagreement is a note (the product record's DOI is cited, both are shown). release
latest means the newest release whose product record carries a DOI.

Wording follows NEON's data policy (CC BY 4.0) and citation guidelines:
    NEON (National Ecological Observatory Network). <name> (<code>), <release>. https://doi.org/<doi>.
    Dataset accessed from <portal> on <Month D, YYYY>.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from catalog import resolve
from catalog.checks import built
from catalog.index import CatalogIndex, ProductEntry
from catalog.releases import bare_doi
from eco_core.errors import EcoError
from eco_core.wire import NextStep

DATA_POLICY_URL = "https://www.neonscience.org/data-samples/data-policies-citation"
AUTHOR = "NEON (National Ecological Observatory Network)"
PUBLISHER = "National Ecological Observatory Network (NEON)"
PORTAL = "https://data.neonscience.org/data-products"
PROTOTYPE_PORTAL = "https://data.neonscience.org/prototype-datasets"
# BibTeX's special characters, and what stands for each inside a braced field.
_BIB_ESCAPES = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "&": r"\&", "%": r"\%", "$": r"\$",
                "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


@dataclass(frozen=True)
class ProductCitation:
    """A product's citation: `release` is None for provisional data, which has no DOI."""

    code: str
    name: str
    release: str | None
    doi: str | None
    doi_url: str | None
    text: str
    bibtex: str
    notes: list[str] = field(default_factory=list)

    @property
    def provisional(self) -> bool:
        return self.release is None


def product_citation(idx: CatalogIndex, code: str, *, release: str, provisional: bool, sites: list[str],
                     when: date, resolved: dict[str, Any] | None = None) -> ProductCitation:
    """The citation of the product `code` (already resolved) in `release` (a tag, uuid or
    latest), or of its provisional data; `sites` are named in it, `when` is the access date.
    The release as resolved is echoed into `resolved`."""
    built(idx, "products")
    built(idx, "releases")
    p = idx.by_code[code]
    notes: list[str] = []
    where = f" (sites {', '.join(sites)})" if sites else ""
    fields = {"author": AUTHOR, "publisher": PUBLISHER}
    if provisional:
        accessed = f"Dataset accessed from {PORTAL}/{p.code}"
        text = (f"{AUTHOR}. {p.name} ({p.code}), provisional data. {accessed}{where} on {long_date(when)}. "
                "Provisional data are not in a release and may change.")
        notes.append("Provisional data may change and have no DOI; cite a release for reproducible work.")
        if "PROVISIONAL" not in p.by_release:
            notes.append(f"{p.code} has no provisional months now; every month with data is in a release.")
        fields.update({"title": f"{p.name} ({p.code}), provisional data", "year": str(when.year),
                       "url": f"{PORTAL}/{p.code}",
                       "note": f"Provisional data, subject to change. {accessed}{where} on {long_date(when)}",
                       "urldate": when.isoformat()})
        bib = bibtex_entry(bib_key("NEON", p.code, "PROVISIONAL", when.isoformat()), fields)
        return ProductCitation(code=p.code, name=p.name, release=None, doi=None, doi_url=None, text=text, bibtex=bib,
                               notes=notes)
    tag, url = pick_release(idx, p, release, {} if resolved is None else resolved, notes)
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
    text = f"{AUTHOR}. {p.name} ({p.code}), {tag}. {doi_url}. {accessed}{where} on {long_date(when)}."
    fields.update({"title": f"{p.name} ({p.code}), {tag}", "year": tag[-4:], "version": tag, "doi": doi,
                   "url": doi_url, "note": f"{accessed}{where} on {long_date(when)}", "urldate": when.isoformat()})
    bib = bibtex_entry(bib_key("NEON", p.code, tag), fields)
    return ProductCitation(code=p.code, name=p.name, release=tag, doi=doi, doi_url=doi_url, text=text, bibtex=bib,
                           notes=notes)


def pick_release(idx: CatalogIndex, p: ProductEntry, release: str, resolved: dict[str, Any],
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


def long_date(d: date) -> str:
    return f"{d.strftime('%B')} {d.day}, {d.year}"


# -- BibTeX ----------------------------------------------------------------------------------

def bib_escape(text: str) -> str:
    return "".join(_BIB_ESCAPES.get(ch, ch) for ch in text)


def bib_key(*parts: str) -> str:
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


def cite_steps(product: str, releases: set[str] | list[str], sites: list[str] | None = None,
               why: str = "Cite the data") -> list[NextStep]:
    """The eco_get_citation step for each release of the data a selection holds: its release kept
    (a RELEASE-2024 selection cites RELEASE-2024), provisional data in the provisional form."""
    steps = []
    for rel in sorted(set(releases)) or ["latest"]:
        args: dict[str, Any] = {"product": product}
        if rel == resolve.PROVISIONAL:
            args["provisional"] = True
        elif rel != "latest":
            args["release"] = rel
        if sites:
            args["site_codes"] = sites
        steps.append(NextStep(tool="eco_get_citation", arguments=args,
                              why=f"{why}: {rel if rel != 'latest' else 'the latest release'}."))
    return steps
