"""Every recorded NEON reply parses into its typed model, and the models fail loudly on drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from upstream import models as m

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_samples"

# Not NEON replies: the API description and reference tables.
NOT_REPLIES = {"openapi_swagger_v0.11.0.json"}
NOT_REPLY_DIRS = {"legacy", "reference"}

E = m.DataEnvelope
MODEL_FOR = {
    "products.json": E[list[m.Product]],
    "products_DP1.00001.001.json": E[m.Product],
    "products_DP1.00001.001_release_RELEASE-2025.json": E[m.Product],
    "products_DP1.10003.001.json": E[m.Product],
    "releases_RELEASE-2025_products.json": E[list[m.Product]],
    "releases_RELEASE-2025_products_DP1.00001.001.json": E[m.Product],
    "sites.json": E[list[m.Site]],
    "sites_ABBY.json": E[m.Site],
    "sites_HARV.json": E[m.Site],
    "releases_RELEASE-2025_sites.json": E[list[m.Site]],
    "releases.json": E[list[m.Release]],
    "releases_RELEASE-2025.json": E[m.Release],
    "locations_D01.json": E[m.Location],
    "locations_HARV.json": E[m.Location],
    "locations_HARV_hierarchy_true.json": E[m.Location],
    "locations_HARV_hierarchy_true_locationType_TOWER.json": E[m.Location],
    "locations_sites.json": E[list[m.Location]],
    "handwritten/locations_HARV_history_true.json": E[m.Location],
    "handwritten/locations_REALM_hierarchy_true_locationType_DOMAIN.json": E[m.Location],
    "handwritten/locations_TOWER100450.json": E[m.Location],
    "taxonomy_genus_Quercus_limit5.json": m.TaxonomyPage,
    "taxonomy_taxonTypeCode_BIRD_offset0_limit5.json": m.TaxonomyPage,
    "taxonomy_taxonTypeCode_BIRD_verbose_true_limit2.json": m.TaxonomyPage,
    "handwritten/taxonomy_empty.json": m.TaxonomyPage,
    "handwritten/taxonomy_taxonTypeCode_TICK_limit1.json": m.TaxonomyPage,
    "samples_supportedClasses.json": E[m.SupportedClasses],
    "handwritten/samples_classes_sampleTag.json": E[m.SampleClasses],
    "handwritten/samples_view_barcode.json": E[m.SampleViews],
    "handwritten/samples_download_degree2.json": E[m.SampleViews],
    "prototype_datasets.json": E[list[m.PrototypeDataset]],
    "prototype_datasets_07dccab1-4990-4d2f-9c5b-bf97e10517e3.json": E[m.PrototypeDataset],
    "prototype_data_07dccab1-4990-4d2f-9c5b-bf97e10517e3.json": E[m.PrototypeData],
    "handwritten/data_DP1.00001.001_ABBY_2023-01.json": E[m.DataListing],
    "handwritten/data_query_DP1.00001.001_ABBY.json": E[m.DataQueryResult],
    "handwritten/data_query_DP1.00001.001_ABBY_HARV_with_PROVISIONAL.json": E[m.DataQueryResult],
    "error_400_location_not_found.json": m.NeonErrorBody,
    "error_400_product_not_found.json": m.NeonErrorBody,
    "error_400_release_not_found.json": m.NeonErrorBody,
    "error_400_site_not_found.json": m.NeonErrorBody,
    "error_403_access_denied.json": m.NeonErrorBody,
    "error_404_samples_classes_no_classes.json": m.NeonErrorBody,
    "handwritten/error_400_taxonomy_type_and_rank_conflict.json": m.NeonErrorBody,
    "error_429_rate_limited.json": m.RateLimitedBody,
    "graphql/derived_products_catalog.json": m.GraphQLResponse,
    "graphql/derived_sites_catalog.json": m.GraphQLResponse,
    "graphql/error_field_undefined_DataProduct_productScienceTeamAbbr.json": m.GraphQLResponse,
    "graphql/error_field_undefined_Query.json": m.GraphQLResponse,
    "graphql/filterProducts_availability.json": m.GraphQLResponse,
    "graphql/filterSites_availability.json": m.GraphQLResponse,
    "graphql/findLocations.json": m.GraphQLResponse,
    "graphql/introspection___type_Site.json": m.GraphQLResponse,
    "graphql/sites_compact.json": m.GraphQLResponse,
}

# The `data` of successful GraphQL samples, parsed into the shape of their query.
GRAPHQL_DATA_MODEL = {
    "graphql/derived_products_catalog.json": m.GqlProductsData,
    "graphql/derived_sites_catalog.json": m.GqlSitesData,
    "graphql/filterProducts_availability.json": m.GqlFilterProductsData,
    "graphql/filterSites_availability.json": m.GqlFilterSitesData,
    "graphql/findLocations.json": m.GqlFindLocationsData,
    "graphql/introspection___type_Site.json": m.GqlIntrospectTypeData,
    "graphql/sites_compact.json": m.GqlSitesData,
}


def _reply_files() -> list[str]:
    out = []
    for path in sorted(SAMPLES.rglob("*.json")):
        rel = path.relative_to(SAMPLES).as_posix()
        if rel in NOT_REPLIES or rel.split("/")[0] in NOT_REPLY_DIRS:
            continue
        out.append(rel)
    return out


def test_every_recorded_reply_has_a_model():
    unmapped = sorted(set(_reply_files()) - set(MODEL_FOR))
    assert not unmapped, f"add these samples to MODEL_FOR: {unmapped}"
    missing = sorted(set(MODEL_FOR) - set(_reply_files()))
    assert not missing, f"MODEL_FOR names files that no longer exist: {missing}"


@pytest.mark.parametrize("rel", _reply_files())
def test_recorded_reply_parses_into_its_model(rel):
    raw = (SAMPLES / rel).read_bytes()
    parsed = MODEL_FOR[rel].model_validate_json(raw)
    if rel in GRAPHQL_DATA_MODEL:
        assert parsed.errors is None
        GRAPHQL_DATA_MODEL[rel].model_validate(parsed.data)


@pytest.mark.parametrize("rel", [r for r in MODEL_FOR if r.startswith(("products", "sites", "releases", "locations"))])
def test_round_trip_gives_back_the_upstream_keys(rel):
    raw = json.loads((SAMPLES / rel).read_bytes())
    parsed = MODEL_FOR[rel].model_validate(raw)
    assert parsed.model_dump(by_alias=True, mode="json", exclude_unset=True) == raw


def _product() -> dict:
    return json.loads((SAMPLES / "products_DP1.00001.001.json").read_bytes())["data"]


def test_product_missing_a_relied_on_field_fails_loudly():
    body = _product()
    del body["productCode"]
    with pytest.raises(ValidationError, match="productCode"):
        m.Product.model_validate(body)


def test_product_field_that_changes_type_fails_instead_of_coercing():
    body = _product()
    body["specs"][0]["specSize"] = "715529"
    with pytest.raises(ValidationError, match="specSize"):
        m.Product.model_validate(body)


def test_unknown_upstream_fields_are_kept_not_rejected():
    body = _product()
    body["productBrandNewField"] = {"x": 1}
    product = m.Product.model_validate(body)
    assert product.to_upstream()["productBrandNewField"] == {"x": 1}


def test_taxonomy_page_gives_next_offset_from_the_next_link():
    page = m.TaxonomyPage.model_validate_json((SAMPLES / "taxonomy_taxonTypeCode_BIRD_offset0_limit5.json").read_bytes())
    assert page.next_offset == 5
    assert page.rows()[0]["dwc:scientificName"] == page.data[0].scientific_name


def test_release_not_found_body_carries_valid_releases():
    body = m.NeonErrorBody.model_validate_json((SAMPLES / "error_400_release_not_found.json").read_bytes())
    assert "RELEASE-2025" in body.valid_releases


def test_location_properties_drop_the_value_for_prefix():
    loc = m.DataEnvelope[m.Location].model_validate_json((SAMPLES / "locations_HARV.json").read_bytes()).data
    assert "Value for " not in "".join(loc.properties)
    assert len(loc.properties) == len(loc.location_properties)


def test_data_query_request_serialises_with_upstream_names():
    req = m.DataQueryRequest(product_code="DP1.00001.001", site_codes=["ABBY"], start_date_month="2023-01",
                             end_date_month="2023-02", package="basic")
    assert req.body() == {"productCode": "DP1.00001.001", "siteCodes": ["ABBY"], "startDateMonth": "2023-01",
                          "endDateMonth": "2023-02", "package": "basic"}
