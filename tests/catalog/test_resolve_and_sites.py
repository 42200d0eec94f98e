"""Resolution of product, site and release inputs, and site search, over the simulated catalog."""

from __future__ import annotations

import pytest

from catalog.releases import list_releases
from catalog.resolve import resolve_product, resolve_release, resolve_site
from catalog.sites import haversine_km
from eco_core.errors import EcoError
from families import products, sites
from families.products import GetProductInput
from families.sites import GetSiteInput, SearchSitesInput, find_sites
from tests.catalog.conftest import family_call


def search_sites(*, index, **filters) -> list:
    """The matches of a site search over `index` (every page)."""
    return find_sites(index, SearchSitesInput(**filters)).hits


def error_of(fn, *args, **kw) -> EcoError:
    with pytest.raises(EcoError) as exc:
        fn(*args, **kw)
    return exc.value


# -- products --------------------------------------------------------------------------------

def test_product_resolves_from_full_code_in_any_case_and_echoes_it(idx):
    r = resolve_product("dp1.10003.001", index=idx)
    assert r.code == "DP1.10003.001"
    assert r.echo() == {"input": "dp1.10003.001", "productCode": "DP1.10003.001",
                        "productName": "Breeding landbird point counts", "matchedBy": "code"}


def test_product_resolves_from_code_without_revision(idx):
    assert resolve_product("DP1.10072", index=idx).matched_by == "code_without_revision"


def test_product_resolves_from_exact_name_ignoring_case_and_spacing(idx):
    r = resolve_product("  small MAMMAL box   trapping ", index=idx)
    assert (r.code, r.matched_by) == ("DP1.10072.001", "name")


def test_name_fitting_several_products_is_ambiguous_with_candidates(idx):
    e = error_of(resolve_product, "temperature", index=idx)
    assert e.code == "ambiguous_input"
    codes = {c["productCode"] for c in e.details["candidates"]}
    assert {"DP1.00041.001", "DP1.20217.001"} <= codes


def test_similar_looking_name_is_never_resolved_silently(idx):
    e = error_of(resolve_product, "Small mamal box trapping", index=idx)
    assert e.code == "not_found"
    assert any(s.startswith("DP1.10072.001") for s in e.details["didYouMean"])


def test_partial_name_fitting_one_product_resolves_and_says_it_matched_by_partial_name(idx):
    r = resolve_product("box trapping", index=idx)
    assert (r.code, r.matched_by) == ("DP1.10072.001", "partial_name")
    assert r.echo()["matchedBy"] == "partial_name"


def test_unknown_product_code_is_not_found_with_did_you_mean(idx):
    e = error_of(resolve_product, "DP1.10003.009", index=idx)
    assert e.code == "not_found" and "DP1.10003.001" in e.details["didYouMean"]


def test_empty_product_is_invalid_argument(idx):
    assert error_of(resolve_product, "  ", index=idx).code == "invalid_argument"


# -- sites -----------------------------------------------------------------------------------

def test_site_resolves_from_code_or_name(idx):
    assert resolve_site("harv", index=idx).echo()["siteCode"] == "HARV"
    r = resolve_site("Harvard Forest & Quabbin Watershed NEON", index=idx)
    assert (r.code, r.matched_by) == ("HARV", "name")
    assert resolve_site("arikaree river", index=idx).code == "ARIK"


def test_unknown_site_code_is_not_found_with_did_you_mean(idx):
    e = error_of(resolve_site, "HARF", index=idx)
    assert e.code == "not_found" and any(s.startswith("HARV") for s in e.details["didYouMean"])


def test_site_name_fitting_several_sites_is_ambiguous(idx):
    e = error_of(resolve_site, "River", index=idx)
    assert e.code == "ambiguous_input" and len(e.details["candidates"]) > 1


# -- releases --------------------------------------------------------------------------------

def test_release_resolves_from_tag_uuid_or_latest(idx):
    assert resolve_release("release-2025", index=idx).tag == "RELEASE-2025"
    latest = resolve_release("latest", index=idx)
    assert latest.tag == "RELEASE-2026" and latest.matched_by == "latest"
    by_uuid = resolve_release(latest.uuid, index=idx)
    assert by_uuid.tag == "RELEASE-2026" and by_uuid.matched_by == "uuid"


def test_provisional_where_a_release_is_expected_is_invalid_argument(idx):
    e = error_of(resolve_release, "PROVISIONAL", index=idx)
    assert e.code == "invalid_argument" and "RELEASE-2026" in e.details["validReleases"]


def test_unknown_release_gives_not_found_with_valid_releases(idx):
    e = error_of(resolve_release, "RELEASE-1999", index=idx)
    assert e.code == "not_found"
    assert e.details["validReleases"] == [f"RELEASE-{y}" for y in range(2021, 2027)]


# -- site search -----------------------------------------------------------------------------

def test_proximity_lists_nearest_first_with_distance_inside_the_radius(idx):
    harv = idx.site_by_code["HARV"]
    hits = search_sites(latitude=harv.latitude, longitude=harv.longitude, radius_km=400.0, index=idx)
    dists = [h.distance_km for h in hits]
    assert hits[0].site.code == "HARV" and dists[0] == 0.0
    assert dists == sorted(dists) and all(d <= 400 for d in dists)
    assert len(hits) > 1
    outside = [s for s in idx.sites if haversine_km(harv.latitude, harv.longitude, s.latitude, s.longitude) > 400]
    assert not {s.code for s in outside} & {h.site.code for h in hits}


def test_site_query_matches_code_name_words_state_and_domain_names(idx):
    assert [h.site.code for h in search_sites(query="harv", index=idx)] == ["HARV"]
    assert "ARIK" in [h.site.code for h in search_sites(query="arikaree", index=idx)]
    colorado = search_sites(query="Colorado", index=idx)
    assert colorado and all(h.site.state_code == "CO" or "colorado" in h.site.domain_name.lower()
                            for h in colorado)
    plains = search_sites(query="central plains", index=idx)
    assert plains and all(h.site.domain_code == "D10" for h in plains)


def test_site_filters_by_type_state_domain_and_product(idx):
    core = search_sites(site_type="CORE", domain_code="d10", index=idx)
    assert core and all(h.site.site_type == "CORE" and h.site.domain_code == "D10" for h in core)
    with_birds = find_sites(idx, SearchSitesInput(product="DP1.10003.001"))
    assert with_birds.resolved["product"]["productCode"] == "DP1.10003.001"
    assert {h.site.code for h in with_birds.hits} == set(idx.by_code["DP1.10003.001"].sites)


def test_site_query_tolerates_typos(idx):
    assert [h.site.code for h in search_sites(query="Harverd Forrest", index=idx)] == ["HARV"]


def test_site_query_matching_nothing_suggests_sites(idx):
    r = find_sites(idx, SearchSitesInput(query="Harvard Glacier"))
    assert r.hits == [] and r.did_you_mean and r.did_you_mean[0] == "HARV"


def test_latitude_without_longitude_names_longitude(idx):
    e = error_of(find_sites, idx, SearchSitesInput(latitude=10.0))
    assert e.code == "invalid_argument" and e.message.startswith("longitude")


# -- the detail reads and reference lists, served from the catalog ---------------------------

class FailingLocations:
    """An upstream whose location records are unavailable."""

    async def location_sites(self, **_):
        raise EcoError("upstream_unavailable", "GET /locations/sites: the upstream did not answer")


async def test_product_record_from_the_catalog_echoes_the_resolution(idx, eco_cfg):
    out = await products.get_product(GetProductInput(product="Breeding landbird point counts"), family_call(eco_cfg))
    assert out.product_code == "DP1.10003.001" and out.specs_count >= 0 and out.source.origin == "catalog"
    assert out.resolved["product"]["matchedBy"] == "name"
    # One DOI form everywhere (issue 42 item 7): doi bare, doiUrl the link.
    last = out.releases[-1] if out.releases else None
    assert last is not None and last.doi and not last.doi.startswith("http")
    assert last.doi_url == f"https://doi.org/{last.doi}"


class FailingSiteRecord:
    """An upstream whose site records are unavailable."""

    async def site(self, code, release=None):
        raise EcoError("upstream_unavailable", f"GET /sites/{code}: the upstream did not answer")


async def test_site_record_lists_the_catalog_products_available_there_when_the_site_record_fails(idx, eco_cfg):
    out = await sites.get_site(GetSiteInput(site="harv", products_limit=300),
                               family_call(eco_cfg, FailingSiteRecord()))
    assert out.site_code == "HARV" and out.source.origin == "catalog"
    assert out.site_name == idx.site_by_code["HARV"].name
    assert {p.product_code for p in out.data_products} == {p.code for p in idx.products if "HARV" in p.sites}
    assert any("GET /sites/HARV failed (upstream_unavailable)" in n for n in out.notes)


async def test_site_elevation_comes_from_the_catalog_when_the_location_records_fail(idx, eco_cfg):
    out = await sites.search_sites(SearchSitesInput(query="harv", include_elevation=True),
                                   family_call(eco_cfg, FailingLocations()))
    assert [i.site_code for i in out.items] == ["HARV"] and out.items[0].elevation is not None
    assert out.source.origin == "catalog" and any("upstream_unavailable" in n for n in out.notes)


def test_reference_lists_of_sites_and_releases(idx):
    assert len(search_sites(index=idx)) == 81
    releases = list_releases(index=idx)
    assert releases.latest == "RELEASE-2026" and len(releases.releases) == 6
    assert all(r.product_count > 0 and r.generation_date for r in releases.releases)
