"""Contract test: for every recorded sample, the simulator answers the same request with the
same structure (keys at every level and, for recorded samples, their order; JSON types,
envelope, error bodies, header names).
Only values and list lengths may differ. Hand-written samples (documented shapes, not
recordings) only need their keys to be present, since they were written minimal."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from upstream_sim.gql import schema

from .conftest import SAMPLES, load_sample, sample_headers

# (sample, method, path, query, json body, send token)
REST_CASES = [
    ("products.json", "GET", "/products", {}, None, False),
    ("products_DP1.10003.001.json", "GET", "/products/DP1.10003.001", {}, None, False),
    ("products_DP1.00001.001.json", "GET", "/products/DP1.00001.001", {}, None, False),
    ("products_DP1.00001.001_release_RELEASE-2025.json", "GET", "/products/DP1.00001.001",
     {"release": "RELEASE-2025"}, None, False),
    ("sites.json", "GET", "/sites", {}, None, False),
    ("sites_ABBY.json", "GET", "/sites/ABBY", {}, None, False),
    ("sites_HARV.json", "GET", "/sites/HARV", {}, None, False),
    ("locations_HARV.json", "GET", "/locations/HARV", {}, None, False),
    ("locations_HARV_hierarchy_true.json", "GET", "/locations/HARV", {"hierarchy": "true"}, None, False),
    ("locations_HARV_hierarchy_true_locationType_TOWER.json", "GET", "/locations/HARV",
     {"hierarchy": "true", "locationType": "TOWER"}, None, False),
    ("locations_D01.json", "GET", "/locations/D01", {}, None, False),
    ("locations_sites.json", "GET", "/locations/sites", {}, None, False),
    ("releases.json", "GET", "/releases", {}, None, False),
    ("releases_RELEASE-2025.json", "GET", "/releases/RELEASE-2025", {}, None, False),
    ("releases_RELEASE-2025.json", "GET", "/releases/e97870c2-bca7-4696-b6ff-45cb42fcbf53", {}, None, False),
    ("releases_RELEASE-2025_products_DP1.00001.001.json", "GET", "/releases/RELEASE-2025/products/DP1.00001.001",
     {}, None, False),
    ("releases_RELEASE-2025_products.json", "GET", "/releases/RELEASE-2025/products", {}, None, False),
    ("releases_RELEASE-2025_sites.json", "GET", "/releases/RELEASE-2025/sites", {}, None, False),
    ("taxonomy_taxonTypeCode_BIRD_offset0_limit5.json", "GET", "/taxonomy",
     {"taxonTypeCode": "BIRD", "verbose": "false", "offset": "0", "limit": "5"}, None, False),
    ("taxonomy_taxonTypeCode_BIRD_verbose_true_limit2.json", "GET", "/taxonomy",
     {"taxonTypeCode": "BIRD", "verbose": "true", "offset": "0", "limit": "2"}, None, False),
    ("taxonomy_genus_Quercus_limit5.json", "GET", "/taxonomy",
     {"genus": "Quercus", "verbose": "false", "offset": "0", "limit": "5"}, None, False),
    ("samples_supportedClasses.json", "GET", "/samples/supportedClasses", {}, None, False),
    ("prototype_datasets.json", "GET", "/prototype/datasets", {}, None, False),
    ("prototype_datasets_07dccab1-4990-4d2f-9c5b-bf97e10517e3.json", "GET",
     "/prototype/datasets/07dccab1-4990-4d2f-9c5b-bf97e10517e3", {}, None, False),
    ("prototype_data_07dccab1-4990-4d2f-9c5b-bf97e10517e3.json", "GET",
     "/prototype/data/07dccab1-4990-4d2f-9c5b-bf97e10517e3", {}, None, False),
    ("handwritten/data_DP1.00001.001_ABBY_2023-01.json", "GET", "/data/DP1.00001.001/ABBY/2023-01",
     {"package": "basic"}, None, True),
    ("handwritten/data_query_DP1.00001.001_ABBY.json", "POST", "/data/query", {},
     {"productCode": "DP1.00001.001", "siteCodes": ["ABBY"], "startDateMonth": "2023-01",
      "endDateMonth": "2023-02", "package": "basic"}, True),
    ("handwritten/data_query_DP1.00001.001_ABBY_HARV_with_PROVISIONAL.json", "POST", "/data/query", {},
     {"productCode": "DP1.10003.001", "siteCodes": ["ABBY", "HARV"], "startDateMonth": "2024-01",
      "endDateMonth": "2026-08", "package": "basic", "includeProvisional": True}, True),
    ("handwritten/samples_view_barcode.json", "GET", "/samples/view", {"barcode": "A00000123456"}, None, True),
    ("handwritten/samples_download_degree2.json", "GET", "/samples/download",
     {"barcode": "A00000123456", "degree": "2"}, None, True),
    ("handwritten/samples_classes_sampleTag.json", "GET", "/samples/classes", {"sampleTag": "A00000123456"},
     None, False),
    ("handwritten/locations_HARV_history_true.json", "GET", "/locations/HARV", {"history": "true"}, None, False),
    ("handwritten/locations_REALM_hierarchy_true_locationType_DOMAIN.json", "GET", "/locations/REALM",
     {"hierarchy": "true", "locationType": "DOMAIN"}, None, False),
    ("handwritten/locations_TOWER100450.json", "GET", "/locations/TOWER100450", {}, None, False),
    ("handwritten/taxonomy_taxonTypeCode_TICK_limit1.json", "GET", "/taxonomy",
     {"taxonTypeCode": "TICK", "limit": "1"}, None, False),
    ("handwritten/taxonomy_empty.json", "GET", "/taxonomy",
     {"scientificname": "Zzzznotaname", "verbose": "false", "offset": "0", "limit": "5"}, None, False),
]

# error samples must match exactly (status, text and body)
ERROR_CASES = [
    ("error_400_product_not_found.json", "/products/DP9.99999.999", {}, False, 400),
    ("error_400_site_not_found.json", "/sites/ZZZZ", {}, False, 400),
    ("error_400_location_not_found.json", "/locations/NOPE_NOT_A_LOCATION", {}, False, 400),
    ("error_400_release_not_found.json", "/releases/RELEASE-1999", {}, False, 400),
    ("error_400_release_not_found.json", "/products", {"release": "RELEASE-1999"}, False, 400),
    ("error_400_release_not_found.json", "/products/DP1.00001.001", {"release": "RELEASE-1999"}, False, 400),
    ("error_403_access_denied.json", "/data/DP1.00001.001/ABBY/2023-01", {}, False, 403),
    ("error_403_access_denied.json", "/samples/view", {"barcode": "A00000123456"}, False, 403),
    ("error_404_samples_classes_no_classes.json", "/samples/classes", {"sampleTag": "NOPE"}, False, 404),
    ("handwritten/error_400_taxonomy_type_and_rank_conflict.json", "/taxonomy",
     {"taxonTypeCode": "PLANT", "family": "Fagaceae"}, False, 400),
]

GRAPHQL_ARGS = {
    "filterProducts": '(filter: {productCodes: ["DP1.00001.001", "DP1.10003.001"], siteCodes: ["ABBY", "HARV"], '
                      'startMonth: "2023-01", endMonth: "2023-06"})',
    "filterSites": '(filter: {siteCodes: ["ABBY"], productCodes: ["DP1.00001.001"], startMonth: "2024-01", '
                   'endMonth: "2024-03"})',
    "findLocations": '(query: {locationNames: ["HARV", "TOWER100450", "D01"]})',
}
INTROSPECT_SITE = ('{ __type(name: "Site") { name kind description fields { name description '
                   "type { name kind ofType { name kind ofType { name kind } } } } "
                   "inputFields { name } enumValues { name } } }")
GRAPHQL_CASES = [
    "graphql/derived_products_catalog.json",
    "graphql/derived_sites_catalog.json",
    "graphql/sites_compact.json",
    "graphql/filterProducts_availability.json",
    "graphql/filterSites_availability.json",
    "graphql/findLocations.json",
    "graphql/introspection___type_Site.json",
]


ROOT_FIELDS = set(schema().query_type.fields)


def shape_diff(sample, actual, path: str = "$", superset: bool = False) -> list[str]:
    """Structural differences; null on either side matches anything (values may differ)."""
    if sample is None or actual is None:
        return []
    if isinstance(sample, dict):
        if not isinstance(actual, dict):
            return [f"{path}: object expected, got {type(actual).__name__}"]
        out = []
        missing = sample.keys() - actual.keys()
        extra = set() if superset else actual.keys() - sample.keys()
        if missing:
            out.append(f"{path}: missing keys {sorted(missing)}")
        if extra:
            out.append(f"{path}: unexpected keys {sorted(extra)}")
        if not superset and not missing and not extra and list(sample) != list(actual):
            out.append(f"{path}: key order {list(actual)} differs from upstream {list(sample)}")
        for k in sample.keys() & actual.keys():
            out += shape_diff(sample[k], actual[k], f"{path}.{k}", superset)
        return out
    if isinstance(sample, list):
        if not isinstance(actual, list):
            return [f"{path}: array expected, got {type(actual).__name__}"]
        if sample and not actual and (path == "$.data" or path.removeprefix("$.data.") in ROOT_FIELDS):
            return [f"{path}: empty array where the sample has items"]
        out = []
        if sample and not isinstance(sample[0], (dict, list)):
            kinds = {_kind(x) for x in sample if x is not None}
            return [f"{path}: array of {kinds} expected" for x in actual if x is not None and _kind(x) not in kinds][:1]
        distinct = list({json.dumps(_skeleton(x), sort_keys=True): x for x in sample}.values())
        for i, item in enumerate(actual[: 40 if "[" not in path else 4]):
            # an item must match the structure of at least one sample item (items can differ in kind)
            tries = [shape_diff(s, item, f"{path}[{i}]", superset) for s in distinct]
            out += min(tries, key=len) if tries else []
        return out
    if _kind(sample) != _kind(actual):
        return [f"{path}: {_kind(sample)} expected, got {type(actual).__name__}"]
    return []


def _kind(value) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string"}.get(type(value), type(value).__name__)


def _skeleton(value):
    if isinstance(value, dict):
        return {k: _skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_skeleton(value[0])] if value else []
    return _kind(value)


def _selection(value, type_name: str) -> str:
    """A GraphQL selection set that asks for exactly the keys the sample has."""
    gtype = schema().type_map[type_name]
    parts = []
    for key, sub in value.items():
        field = gtype.fields[key]
        inner = field.type
        while hasattr(inner, "of_type"):
            inner = inner.of_type
        if hasattr(inner, "fields"):
            items = sub if isinstance(sub, list) else [sub]
            merged: dict = {}
            for item in items:
                if isinstance(item, dict):
                    merged.update(item)
            parts.append(f"{key} {{ {_selection(merged, inner.name)} }}" if merged else f"{key} {{ __typename }}")
        else:
            parts.append(key)
    return " ".join(parts)


def graphql_query_for(sample: dict) -> str:
    if "__type" in sample["data"]:
        return INTROSPECT_SITE
    (root, value), = sample["data"].items()
    field = schema().query_type.fields[root]
    inner = field.type
    while hasattr(inner, "of_type"):
        inner = inner.of_type
    items = value if isinstance(value, list) else [value]
    merged: dict = {}
    for item in items:
        merged.update(item)
    return f"{{ {root}{GRAPHQL_ARGS.get(root, '')} {{ {_selection(merged, inner.name)} }} }}"


def _case_id(case) -> str:
    return f"{case[1]} {case[2]} {case[3] or ''}".strip()


@pytest.mark.parametrize("case", REST_CASES, ids=_case_id)
def test_rest_answers_have_the_recorded_structure(case, sim_server, token):
    name, method, path, query, body, with_token = case
    headers = {"X-API-Token": token} if with_token else {}
    r = httpx.request(method, sim_server.base_url + path, params=query, json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text[:300]
    sample = load_sample(name)
    diffs = shape_diff(sample, r.json(), superset=name.startswith("handwritten/"))
    assert not diffs, "\n".join(diffs[:30])


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: f"{c[1]} {c[2] or ''}")
def test_error_answers_match_the_recorded_body_exactly(case, sim_server):
    name, path, query, _, status = case
    r = httpx.get(sim_server.base_url + path, params=query, timeout=30)
    assert r.status_code == status
    assert r.json() == load_sample(name)
    assert r.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("name", GRAPHQL_CASES)
def test_graphql_answers_have_the_recorded_structure(name, sim_server):
    sample = load_sample(name)
    r = httpx.post(sim_server.graphql_url, json={"query": graphql_query_for(sample)}, timeout=60)
    assert r.status_code == 200
    diffs = shape_diff(sample, r.json())
    assert not diffs, "\n".join(diffs[:30])


def test_graphql_unknown_root_field_gives_neons_validation_error(sim_server):
    r = httpx.post(sim_server.graphql_url, json={"query": "{ nope }"}, timeout=30)
    assert r.status_code == 200
    assert r.json() == load_sample("graphql/error_field_undefined_Query.json")


def test_graphql_unknown_product_field_gives_neons_validation_error(sim_server):
    sample = load_sample("graphql/error_field_undefined_DataProduct_productScienceTeamAbbr.json")
    query = "{ products { productCode productName productStatus productScienceTeam productScienceTeamAbbr } }"
    body = httpx.post(sim_server.graphql_url, json={"query": query}, timeout=30).json()
    assert shape_diff(sample, body) == []
    assert body["errors"][0]["message"] == sample["errors"][0]["message"]
    assert body["errors"][0]["extensions"] == {"classification": "ValidationError"}


def test_graphql_is_not_under_the_rest_prefix(sim_server):
    r = httpx.post(sim_server.base_url + "/graphql", json={"query": "{ nope }"}, timeout=30)
    assert r.status_code == 404


@pytest.mark.parametrize("headers_file,path,with_token", [
    ("headers/example_200.headers", "/products/DP1.00001.001", False),
    ("headers/example_403.headers", "/data/DP1.00001.001/ABBY/2023-01", False),
])
def test_answers_carry_the_recorded_header_names(headers_file, path, with_token, sim_server):
    want = set(sample_headers(headers_file)) - {"alt-svc"}
    r = httpx.get(sim_server.base_url + path, timeout=30)
    got = {k.lower() for k in r.headers}
    assert want - got == set()
    assert r.headers["x-ratelimit-limit"] == "200"


def test_rate_limited_answer_matches_the_recorded_body_and_header_names(sim_server):
    sim_server.faults.add(kind="rate_limit", route=r"/products$", count=1, retry_after=1)
    r = httpx.get(sim_server.base_url + "/products", timeout=30)
    assert r.status_code == 429
    assert r.json() == load_sample("error_429_rate_limited.json")
    assert set(sample_headers("headers/rate_limited_429.headers")) <= {k.lower() for k in r.headers}


def test_every_sample_file_is_covered_by_a_contract_case():
    covered = {c[0] for c in REST_CASES} | {c[0] for c in ERROR_CASES} | set(GRAPHQL_CASES) | {
        "graphql/error_field_undefined_Query.json",
        "graphql/error_field_undefined_DataProduct_productScienceTeamAbbr.json",
        "error_429_rate_limited.json", "openapi_swagger_v0.11.0.json",
    }
    on_disk = {str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.json")
               if not str(p.relative_to(SAMPLES)).startswith(("reference/", "legacy/"))}
    assert on_disk - covered == set()


def test_every_swagger_path_is_served(sim_server, token):
    spec = json.loads((SAMPLES / "openapi_swagger_v0.11.0.json").read_text())
    fill = {"productCode": "DP1.00001.001", "siteCode": "ABBY", "year-month": "2023-01",
            "locationName": "HARV", "releaseIdentifier": "RELEASE-2025", "releaseTag": "RELEASE-2025",
            "uuid": "07dccab1-4990-4d2f-9c5b-bf97e10517e3", "filename": "x"}
    for path, ops in spec["paths"].items():
        if "get" not in ops:
            continue
        url = re.sub(r"\{([^}]+)\}", lambda m: fill[m.group(1)], path)
        r = httpx.get(sim_server.base_url + url, headers={"X-API-Token": token},
                      params={"barcode": "A00000123456", "sampleTag": "A00000123456", "productCode": "DP1.00001.001",
                              "siteCode": "ABBY", "startDateMonth": "2023-01", "endDateMonth": "2023-01"},
                      timeout=60, follow_redirects=False)
        assert r.status_code != 405 and not (r.status_code == 404 and "Not Found" == r.text), url


def test_the_structure_check_notices_missing_keys_and_type_changes():
    sample = load_sample("products_DP1.00001.001.json")
    broken = json.loads(json.dumps(sample))
    del broken["data"]["siteCodes"][0]["availableReleases"]
    broken["data"]["productHasExpanded"] = "yes"
    diffs = shape_diff(sample, broken)
    assert any("availableReleases" in d for d in diffs)
    assert any("productHasExpanded" in d for d in diffs)
    assert shape_diff(sample, sample) == []
