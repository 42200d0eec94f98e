"""NEON-shaped JSON bodies for products, sites and releases (key order as recorded upstream)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from .world import World


@dataclass(frozen=True)
class Urls:
    """Where the simulator is reachable; every URL in a body is built from these."""

    api: str  # e.g. http://127.0.0.1:PORT/api/v0
    storage: str  # e.g. http://localhost:PORT2/storage/neon-publication

    def data_url(self, code: str, site: str, ym: str, release: str | None, via_release_path: bool) -> str:
        if release and via_release_path:
            return f"{self.api}/releases/{release}/data/{code}/{site}/{ym}"
        suffix = f"?release={release}" if release else ""
        return f"{self.api}/data/{code}/{site}/{ym}{suffix}"


def public(d: dict) -> dict:
    return {k: v for k, v in d.items() if not k.startswith("_")}


def release_ref(world: World, tag: str, urls: Urls) -> dict:
    rel = world.release_by_key[tag]
    return {"release": tag, "generationDate": rel["generationDate"], "url": f"{urls.api}/releases/{tag}"}


def _available_releases(world: World, months: list[str], release: str | None) -> list[dict]:
    if release:
        return [{"release": release, "availableMonths": months}]
    # months are sorted: everything up to the latest release's cutoff is in that release
    latest = world.latest_release
    cut = bisect_right(months, latest["cutoff"])
    out = []
    if months[cut:]:  # upstream lists PROVISIONAL first, then releases
        out.append({"release": "PROVISIONAL", "availableMonths": months[cut:]})
    if months[:cut]:
        out.append({"release": latest["release"], "availableMonths": months[:cut]})
    return out


def product_json(world: World, code: str, urls: Urls, release: str | None = None,
                 via_release_path: bool = False) -> dict:
    p = world.products[code]
    body = public(p)
    body["specs"] = [dict(spec, specUrl=f"{urls.api}/documents/{spec['specNumber']}") for spec in p["specs"]]
    tags = world.product_releases(code)
    if release:
        tags = [t for t in tags if t == release]
    rels = []
    for t in tags:
        ref = release_ref(world, t, urls)
        ref["productDoi"] = world.product_doi(code, t)
        rels.append(ref)
    body["releases"] = rels
    site_codes = []
    for site, months in world.availability(code).items():
        if release:
            months = world.months_in_release(months, release)
            if not months:
                continue
        site_codes.append({
            "siteCode": site,
            "availableMonths": months,
            "availableDataUrls": [urls.data_url(code, site, m, release, via_release_path) for m in months],
            "availableReleases": _available_releases(world, months, release),
        })
    body["siteCodes"] = site_codes
    return body


def site_json(world: World, site: str, urls: Urls, release: str | None = None,
              via_release_path: bool = False) -> dict:
    body = public(world.sites[site])
    products = []
    first = None
    for code in world.site_products(site):
        months = world.months_for(code, site, release)
        if not months:
            continue
        first = min(first or months[0], months[0])
        products.append({
            "dataProductCode": code,
            "dataProductTitle": world.products[code]["productName"],
            "availableMonths": months,
            "availableDataUrls": [urls.data_url(code, site, m, release, via_release_path) for m in months],
            "availableReleases": _available_releases(world, months, release),
        })
    tags = [r["release"] for r in world.releases if first and first <= r["cutoff"]]
    if release:
        tags = [t for t in tags if t == release]
    body["releases"] = [release_ref(world, t, urls) for t in tags]
    body["dataProducts"] = products
    return body


def release_json(world: World, tag: str, urls: Urls, artifact: dict) -> dict:
    rel = world.release_by_key[tag]
    products = [{
        "productCode": code,
        "productName": p["productName"],
        "productDescription": p["productDescription"],
        "productDoi": world.product_doi(code, rel["release"])["url"],
    } for code, p in world.products.items() if rel["release"] in world.product_releases(code)]
    gone = world.withdrawn_products
    products += [{"productCode": code, "productName": gone[code]["productName"],
                  "productDescription": gone[code]["productDescription"],
                  "productDoi": world.product_doi(code, rel["release"])["url"]}
                 for code in world.release_withdrawn(rel["release"])]
    return {
        "release": rel["release"],
        "uuid": rel["uuid"],
        "generationDate": rel["generationDate"],
        "artifacts": [artifact],
        "dataProducts": products,
    }
