"""GraphQL executes real queries against NEON's schema over the same world as REST."""

from __future__ import annotations

import httpx
import pytest


def gql(sim, query: str, variables: dict | None = None) -> dict:
    r = httpx.post(sim.graphql_url, json={"query": query, "variables": variables}, timeout=60)
    assert r.status_code == 200
    return r.json()


def test_product_agrees_with_rest_and_spec_size_is_a_string(sim_server, api):
    body = gql(sim_server, '{ product(productCode: "DP1.00001.001") { productCode productName '
                           "specs { specNumber specSize } siteCodes { siteCode availableMonths } } }")
    p = body["data"]["product"]
    rest = api.get("/products/DP1.00001.001").json()["data"]
    assert p["productName"] == rest["productName"]
    assert p["specs"][0]["specSize"] == str(rest["specs"][0]["specSize"])
    assert [s["siteCode"] for s in p["siteCodes"]] == [s["siteCode"] for s in rest["siteCodes"]]


def test_filter_products_windows_months_but_not_release_months(sim_server):
    q = """query($f: DataProductFilter!) { filterProducts(filter: $f) {
             productCode siteCodes { siteCode availableMonths availableReleases { release availableMonths } } } }"""
    body = gql(sim_server, q, {"f": {"productCodes": ["DP1.00001.001"], "siteCodes": ["HARV"],
                                     "startMonth": "2023-01", "endMonth": "2023-03"}})
    (site,) = body["data"]["filterProducts"][0]["siteCodes"]
    assert site["siteCode"] == "HARV"
    assert all("2023-01" <= m <= "2023-03" for m in site["availableMonths"])
    assert sum(len(r["availableMonths"]) for r in site["availableReleases"]) > 3


def test_sites_site_and_filter_sites(sim_server):
    assert len(gql(sim_server, "{ sites { siteCode } }")["data"]["sites"]) == 81
    site = gql(sim_server, '{ site(siteCode: "HARV") { siteName domainCode } }')["data"]["site"]
    assert site["domainCode"] == "D01"
    got = gql(sim_server, '{ filterSites(filter: {siteCodes: ["ABBY"], productCodes: ["DP1.00001.001"]}) '
                          "{ siteCode dataProducts { dataProductCode } } }")["data"]["filterSites"]
    assert got[0]["dataProducts"] == [{"dataProductCode": "DP1.00001.001"}]


def test_locations_hierarchy_and_find(sim_server):
    loc = gql(sim_server, '{ location(name: "HARV") { locationType locationHistory { current } } }')
    assert loc["data"]["location"]["locationType"] == "SITE"
    tree = gql(sim_server, '{ locationHierarchy(name: "HARV", locationType: "TOWER") { locationChildHierarchy '
                           "{ locationName locationType } } }")["data"]["locationHierarchy"]
    assert tree["locationChildHierarchy"][0]["locationType"] == "TOWER"
    found = gql(sim_server, '{ findLocations(query: {locationNames: ["HARV", "D01", "NOPE"]}) { locationName } }')
    assert [x["locationName"] for x in found["data"]["findLocations"]] == ["HARV", "D01"]


def test_prototypes_and_demo_product(sim_server):
    ds = gql(sim_server, "{ prototypeDatasets { uuid data { files { fileName fileSize md5 } } } }")
    files = ds["data"]["prototypeDatasets"][0]["data"]["files"]
    assert files and all(isinstance(f["fileSize"], int) for f in files)
    one = gql(sim_server, '{ prototypeDataset(uuid: "07dccab1-4990-4d2f-9c5b-bf97e10517e3") { projectTitle } }')
    assert "BLUE" in one["data"]["prototypeDataset"]["projectTitle"]
    assert gql(sim_server, '{ demoProduct(productCode: "DP1.00001.001") { productCode } }')["data"]


def test_introspection_works_but_only_once_per_query(sim_server):
    assert gql(sim_server, '{ __type(name: "Site") { name } }')["data"]["__type"]["name"] == "Site"
    bad = gql(sim_server, '{ __schema { queryType { name } } __type(name: "Site") { name } }')
    assert bad["errors"][0]["extensions"]["classification"] == "BadFaithIntrospection"


@pytest.mark.parametrize("query,needle", [
    ('{ product(productCode: "DP9.99999.999") { productCode } }', "Product code not found"),
    ('{ products(release: "PROVISIONAL") { productCode } }', "Release not found"),
    ('{ site(siteCode: "ZZZZ") { siteCode } }', "Site code not found"),
])
def test_lookups_of_unknown_things_return_graphql_errors(sim_server, query, needle):
    body = gql(sim_server, query)
    assert needle in body["errors"][0]["message"]
    assert body["errors"][0]["extensions"]["classification"] == "DataFetchingException"


def test_syntax_errors_are_reported_as_invalid_syntax(sim_server):
    body = gql(sim_server, "{ products { ")
    assert body["errors"][0]["extensions"]["classification"] == "InvalidSyntax"
