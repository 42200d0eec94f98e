"""Turning what a caller typed into one catalog value, or a precise error. Synchronous, in memory.

    resolve_product(text) -> ResolvedProduct(code, name, input, matched_by)
        full code (any case), code without revision, or exact name (case and spacing ignored)
    resolve_site(text) -> ResolvedSite(code, name, input, matched_by)
        four-letter code (any case) or exact name (a trailing " NEON" optional)
    resolve_release(text) -> ResolvedRelease(tag, uuid, input, matched_by)
        RELEASE-YYYY (any case), a release uuid, or "latest"

Each result's `.echo()` is what a tool puts under `resolved`. Errors (EcoError):
    ambiguous_input  a code without revision or a partial name that fits several
                     (details.candidates); a partial name that fits one entry resolves to it,
                     and `resolved` says it matched by partial name
    not_found        nothing fits; details.didYouMean (releases: details.validReleases)
    invalid_argument PROVISIONAL where a release is expected; empty input
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from catalog.index import CatalogIndex, ReleaseEntry, get_index, words
from catalog.suggest import nearest
from eco_core.errors import EcoError

FULL_CODE = re.compile(r"^DP[1-4]\.\d{5}\.\d{3}$")
BASE_CODE = re.compile(r"^DP[1-4]\.\d{5}$")
SITE_CODE = re.compile(r"^[A-Z]{4}$")
RELEASE_TAG = re.compile(r"^RELEASE-\d{4}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_CANDIDATES = 10
# NEON's label for months not yet in any release: a key of availability, never a release.
PROVISIONAL = "PROVISIONAL"


@dataclass(frozen=True)
class ResolvedProduct:
    code: str
    name: str
    input: str
    matched_by: str  # code | code_without_revision | name | partial_name

    def echo(self) -> dict[str, Any]:
        return {"input": self.input, "productCode": self.code, "productName": self.name, "matchedBy": self.matched_by}


@dataclass(frozen=True)
class ResolvedSite:
    code: str
    name: str
    input: str
    matched_by: str  # code | name | partial_name

    def echo(self) -> dict[str, Any]:
        return {"input": self.input, "siteCode": self.code, "siteName": self.name, "matchedBy": self.matched_by}


@dataclass(frozen=True)
class ResolvedRelease:
    tag: str
    uuid: str | None
    input: str
    matched_by: str  # tag | uuid | latest

    def echo(self) -> dict[str, Any]:
        return {"input": self.input, "release": self.tag, "uuid": self.uuid, "matchedBy": self.matched_by}


def _norm(text: str) -> str:
    return " ".join(words(text))


def _text(field: str, text: str | None) -> str:
    if text is None or not str(text).strip():
        raise EcoError("invalid_argument", f"{field}: must not be empty", details={"field": field})
    return str(text).strip()


def resolve_product(text: str | None, *, index: CatalogIndex | None = None, field: str = "product") -> ResolvedProduct:
    raw = _text(field, text)
    idx = index or get_index()
    upper = raw.upper()
    if FULL_CODE.match(upper):
        p = idx.by_code.get(upper)
        if p is None:
            raise EcoError("not_found", f"{field}: no product with code {upper}",
                           details=_near_products(upper, idx))
        return ResolvedProduct(p.code, p.name, raw, "code")
    if BASE_CODE.match(upper):
        found = [p for p in idx.products if p.base_code == upper]
        if len(found) == 1:
            return ResolvedProduct(found[0].code, found[0].name, raw, "code_without_revision")
        if found:
            raise _ambiguous(field, raw, [{"productCode": p.code, "productName": p.name} for p in found])
        raise EcoError("not_found", f"{field}: no product with code {upper}.*",
                       details=_near_products(upper, idx))
    wanted = _norm(raw)
    exact = [p for p in idx.products if _norm(p.name) == wanted]
    if len(exact) == 1:
        return ResolvedProduct(exact[0].code, exact[0].name, raw, "name")
    partial = exact or [p for p in idx.products if wanted and wanted in _norm(p.name)]
    if len(partial) == 1:
        return ResolvedProduct(partial[0].code, partial[0].name, raw, "partial_name")
    if partial:
        raise _ambiguous(field, raw, [{"productCode": p.code, "productName": p.name} for p in partial])
    raise EcoError("not_found", f"{field}: no product named {raw!r}", details=_near_products(raw, idx))


def _near_products(text: str, idx: CatalogIndex) -> dict[str, Any]:
    """didYouMean: product codes (what every product argument accepts), with their names alongside."""
    names = {p.code: p.name for p in idx.products}
    codes = nearest(text, names)
    return {"didYouMean": codes, "nearest": [{"productCode": c, "productName": names[c]} for c in codes]}


def _site_name(name: str) -> str:
    n = _norm(name)
    return n[:-5] if n.endswith(" neon") else n


def resolve_site(text: str | None, *, index: CatalogIndex | None = None, field: str = "site") -> ResolvedSite:
    raw = _text(field, text)
    idx = index or get_index()
    upper = raw.upper()
    if SITE_CODE.match(upper):
        s = idx.site_by_code.get(upper)
        if s is not None:
            return ResolvedSite(s.code, s.name, raw, "code")
    wanted = _site_name(raw)
    exact = [s for s in idx.sites if _site_name(s.name) == wanted]
    if len(exact) == 1:
        return ResolvedSite(exact[0].code, exact[0].name, raw, "name")
    partial = exact or [s for s in idx.sites if len(wanted) >= 3 and wanted in _site_name(s.name)]
    if len(partial) == 1:
        return ResolvedSite(partial[0].code, partial[0].name, raw, "partial_name")
    if partial:
        raise _ambiguous(field, raw, [{"siteCode": s.code, "siteName": s.name} for s in partial])
    names = {s.code: s.name for s in idx.sites}
    codes = nearest(raw, names)
    what = f"code {upper}" if SITE_CODE.match(upper) else f"name {raw!r}"
    raise EcoError("not_found", f"{field}: no field site with {what}", details={
        "didYouMean": codes, "nearest": [{"siteCode": c, "siteName": names[c]} for c in codes]})


def resolve_release(text: str | None, *, index: CatalogIndex | None = None, field: str = "release") -> ResolvedRelease:
    raw = _text(field, text)
    idx = index or get_index()
    upper = raw.upper()
    # The product catalog knows the tags too, so a missing releases catalog does not break this.
    known: dict[str, ReleaseEntry | None] = {r.tag: r for r in idx.releases}
    for p in idx.products:
        for tag in p.release_tags:
            known.setdefault(tag, None)
    valid = sorted(known)
    if upper == PROVISIONAL:
        raise EcoError("invalid_argument",
                       f"{field}: PROVISIONAL is not a release (provisional data is newer than the latest release "
                       "and may change); give a RELEASE-YYYY tag, latest, or use the provisional option",
                       details={"field": field, "validReleases": valid})
    if upper == "LATEST":
        if not valid:
            raise EcoError("catalog_unavailable", "the releases catalog has not been built yet")
        tag = valid[-1]
        entry = known[tag]
        return ResolvedRelease(tag, entry.uuid if entry else None, raw, "latest")
    if upper in known:
        entry = known[upper]
        return ResolvedRelease(upper, entry.uuid if entry else None, raw, "tag")
    for r in idx.releases:
        if r.uuid and r.uuid.lower() == raw.lower():
            return ResolvedRelease(r.tag, r.uuid, raw, "uuid")
    did = [t for t in valid if RELEASE_TAG.match(upper) is None and upper[-4:] in t]
    raise EcoError("not_found", f"{field}: no release {raw!r}",
                   details={"validReleases": valid, "didYouMean": did})


def _ambiguous(field: str, raw: str, candidates: list[dict[str, str]]) -> EcoError:
    shown = candidates[:MAX_CANDIDATES]
    return EcoError("ambiguous_input", f"{field}: {raw!r} fits {len(candidates)} entries; give one code",
                    details={"candidates": shown, "candidateCount": len(candidates)})
