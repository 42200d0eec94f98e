"""The simulated catalog looks like NEON's and is the same for the same seed."""

from __future__ import annotations

import csv
from collections import Counter

from upstream_sim import refdata
from upstream_sim.world import World


def test_the_same_seed_gives_the_same_world_and_another_seed_another():
    a, b, c = World(7), World(7), World(8)
    assert a.availability("DP1.10003.001") == b.availability("DP1.10003.001")
    assert a.products["DP1.00001.001"]["specs"] == b.products["DP1.00001.001"]["specs"]
    assert a.availability("DP1.10003.001") != c.availability("DP1.10003.001")


def test_all_81_real_field_sites_are_served_with_their_real_attributes(api):
    sites = api.get("/sites").json()["data"]
    assert len(sites) == 81
    rows = {r["field_site_id"]: r for r in refdata.field_sites()}
    by_code = {s["siteCode"]: s for s in sites}
    assert set(by_code) == set(rows)
    harv = by_code["HARV"]
    assert (harv["siteType"], harv["domainCode"], harv["stateCode"], harv["stateName"]) == \
        ("CORE", "D01", "MA", "Massachusetts")
    assert harv["siteLatitude"] == float(rows["HARV"]["field_latitude"])
    assert Counter(s["siteType"] for s in sites) == {"CORE": 40, "GRADIENT": 41}
    assert {s["domainCode"] for s in sites} == {f"D{i:02d}" for i in range(1, 21)}


def test_products_span_levels_teams_and_statuses(api):
    products = api.get("/products").json()["data"]
    assert 185 <= len(products) <= 200
    assert {p["productCode"][:3] for p in products} == {"DP1", "DP2", "DP3", "DP4"}
    assert {p["productScienceTeamAbbr"] for p in products} == {"TIS", "TOS", "AIS", "AOS", "AOP"}
    assert {p["productStatus"] for p in products} == {"ACTIVE", "FUTURE", "RETIRED"}
    future = [p for p in products if p["productStatus"] == "FUTURE"]
    assert all(p["releases"] == [] and p["siteCodes"] == [] for p in future)
    themes = {t for p in products for t in p["themes"]}
    assert "Atmosphere" in themes and "Organisms, Populations, and Communities" in themes
    spec = products[0]["specs"][0]
    assert spec["specUrl"].endswith(f"/documents/{spec['specNumber']}")


def test_availability_is_split_by_release_with_provisional_months_after_the_latest(api):
    p = api.get("/products/DP1.00001.001").json()["data"]
    harv = next(s for s in p["siteCodes"] if s["siteCode"] == "HARV")
    by_rel = {r["release"]: r["availableMonths"] for r in harv["availableReleases"]}
    assert set(by_rel) == {"RELEASE-2026", "PROVISIONAL"}
    assert max(by_rel["RELEASE-2026"]) <= "2025-06" < min(by_rel["PROVISIONAL"])
    assert sorted(by_rel["RELEASE-2026"] + by_rel["PROVISIONAL"]) == harv["availableMonths"]
    assert [r["release"] for r in p["releases"]] == [f"RELEASE-{y}" for y in range(2021, 2027)]
    assert len({r["productDoi"]["url"] for r in p["releases"]}) == 6


def test_a_release_view_shows_only_that_release_and_points_urls_at_it(api):
    p = api.get("/products/DP1.00001.001", params={"release": "RELEASE-2025"}).json()["data"]
    site = p["siteCodes"][0]
    assert [r["release"] for r in p["releases"]] == ["RELEASE-2025"]
    assert max(site["availableMonths"]) <= "2024-06"
    assert site["availableDataUrls"][0].endswith("?release=RELEASE-2025")
    via = api.get("/releases/RELEASE-2025/products/DP1.00001.001").json()["data"]
    assert "/releases/RELEASE-2025/data/DP1.00001.001/" in via["siteCodes"][0]["availableDataUrls"][0]


def test_releases_have_uuids_dates_dois_and_a_downloadable_manifest(api):
    rels = api.get("/releases").json()["data"]
    assert [r["release"] for r in rels] == [f"RELEASE-{y}" for y in range(2021, 2027)]
    r25 = api.get("/releases/e97870c2-bca7-4696-b6ff-45cb42fcbf53").json()["data"]
    assert r25["release"] == "RELEASE-2025" and r25["generationDate"] == "2025-01-29T00:07:30Z"
    art = r25["artifacts"][0]
    assert art["type"] == "MANIFEST_AVAILABLE" and "X-Goog-Expires=604800" in art["url"]
    import hashlib

    import httpx
    body = httpx.get(art["url"], timeout=30).content
    assert (len(body), hashlib.md5(body).hexdigest()) == (art["size"], art["md5"])
    assert all(d["productDoi"].startswith("https://doi.org/10.48443/") for d in r25["dataProducts"])


def test_locations_form_a_tree_from_realm_to_plots(api):
    realm = api.get("/locations/REALM").json()["data"]
    assert len(realm["locationChildren"]) == 20
    harv = api.get("/locations/HARV").json()["data"]
    kids = harv["locationChildren"]
    assert "TOWER100450" in kids and any(k.endswith(".mammalGrid.mam") for k in kids)
    plot = api.get(f"/locations/{next(k for k in kids if k.endswith('.mam'))}").json()["data"]
    assert plot["locationType"] == "OS Plot - mam" and len(plot["locationPolygon"]["coordinates"]) == 5
    tower = api.get("/locations/HARV", params={"hierarchy": "true", "locationType": "TOWER"}).json()["data"]
    (t,) = tower["locationChildHierarchy"]
    assert t["locationType"] == "TOWER" and t["locationChildHierarchy"][0]["locationType"] == "LEVEL"
    hist = api.get("/locations/HARV", params={"history": "true"}).json()["data"]["locationHistory"]
    assert hist[0]["current"] is True and hist[1]["current"] is False
    assert len(api.get("/locations/sites").json()["data"]) == 81


def test_taxonomy_pages_with_absolute_next_and_prev_links(api, sim_server):
    for code in refdata.taxon_type_codes():
        page = api.get("/taxonomy", params={"taxonTypeCode": code, "limit": 2}).json()
        assert page["count"] == 2 and page["data"][0]["taxonTypeCode"] == code
    p2 = api.get("/taxonomy", params={"taxonTypeCode": "BIRD", "offset": 5, "limit": 5}).json()
    assert p2["prev"] == f"{sim_server.base_url}/taxonomy?taxonTypeCode=BIRD&verbose=false&offset=0&limit=5"
    assert p2["next"].endswith("offset=10&limit=5")
    following = api.get(p2["next"]).json()
    assert following["data"][0]["taxonID"] != p2["data"][0]["taxonID"]
    assert api.get("/taxonomy", params={"genus": "Quercus"}).json()["total"] >= 5


def test_samples_are_found_by_tag_uuid_barcode_or_archive_guid(api, sim_server):
    samples = sim_server.state.samples
    view = api.get("/samples/view", params={"barcode": "A00000123456"}).json()["data"]["sampleViews"][0]
    assert view["childSampleIdentifiers"] and view["sampleEvents"]
    by_uuid = api.get("/samples/view", params={"sampleUuid": view["sampleUuid"]}).json()["data"]["sampleViews"]
    assert by_uuid[0]["sampleTag"] == "A00000123456"
    with_guid = next(s for s in samples.samples if s["archiveGuid"])
    got = api.get("/samples/view", params={"archiveGuid": with_guid["archiveGuid"]}).json()["data"]["sampleViews"]
    assert got[0]["sampleUuid"] == with_guid["sampleUuid"]
    classes = api.get("/samples/classes", params={"sampleTag": samples.SHARED_TAG}).json()["data"]["sampleClasses"]
    assert len(classes) == 2
    assert api.get("/samples/view", params={"sampleTag": samples.SHARED_TAG}).status_code == 200
    chain = next(s for s in samples.samples if s["_children"] and s["_children"][0]["_children"])
    down = api.get("/samples/download", params={"sampleUuid": chain["sampleUuid"], "degree": 2}).json()
    assert len(down["data"]["sampleViews"]) == 3


def test_prototype_datasets_list_their_files(api):
    datasets = api.get("/prototype/datasets").json()["data"]
    assert len(datasets) >= 3
    data = api.get(f"/prototype/data/{datasets[1]['uuid']}").json()["data"]
    import hashlib

    import httpx
    f = data["files"][0]
    body = httpx.get(f["url"], timeout=30).content
    assert (len(body), hashlib.md5(body).hexdigest()) == (f["size"], f["md5"])


def test_reference_copies_ship_with_the_package():
    with open(refdata.REF_DIR / "table_types.csv", encoding="utf-8") as fh:
        assert sum(1 for _ in csv.DictReader(fh)) == 606
    assert len(refdata.catalog_products()) == 197
