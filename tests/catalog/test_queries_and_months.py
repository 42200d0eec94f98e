"""Pure parts: the GraphQL catalog queries against NEON's schema, record parsing, and month intervals."""

from __future__ import annotations

from pathlib import Path

import pytest
from graphql import build_schema, parse, validate
from pydantic import ValidationError

from catalog import months
from catalog.services.build import build_products, build_sites
from catalog.services.graphql_queries import CATALOG_QUERY, PRODUCTS_QUERY, SITES_QUERY, CatalogResult
from eco_core.errors import EcoError
from upstream import models as m

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "upstream_samples"


@pytest.fixture(scope="module")
def schema():
    return build_schema((SAMPLES / "graphql" / "schema_reconstructed.graphql").read_text())


@pytest.mark.parametrize("query", [PRODUCTS_QUERY, SITES_QUERY, CATALOG_QUERY])
def test_catalog_queries_are_valid_against_neons_schema(schema, query):
    assert validate(schema, parse(query)) == []
    assert "productScienceTeamAbbr" not in query


def test_recorded_graphql_catalog_sample_parses_and_spec_size_may_be_a_string():
    import json

    data = json.loads((SAMPLES / "graphql" / "derived_products_catalog.json").read_text())["data"]
    sites = json.loads((SAMPLES / "graphql" / "derived_sites_catalog.json").read_text())["data"]
    result = m.parse_graphql_data(CatalogResult, {**data, **sites})
    assert result.products[0].specs[0].spec_size == 715529
    products, _cells = build_products(result.products)
    first = products[0]
    assert (first.product_code_long, first.product_code_presentation, first.product_category,
            first.product_science_team_abbr) == ("NEON.DOM.SITE.DP1.00001.001", "NEON.DP1.00001",
                                                 "Level 1 Data Product", "TIS")


def test_rest_sample_gives_the_same_derived_fields_it_states():
    import json

    for raw in json.loads((SAMPLES / "products.json").read_text())["data"]:
        stated = m.Product.model_validate(raw)
        derived = m.Product.model_validate({k: v for k, v in raw.items() if k not in {
            "productCodeLong", "productCodePresentation", "productCategory", "productScienceTeamAbbr"}})
        (a,), _ = build_products([stated])
        (b,), _ = build_products([derived])
        assert (a.product_code_long, a.product_code_presentation, a.product_category, a.product_science_team_abbr) \
            == (b.product_code_long, b.product_code_presentation, b.product_category, b.product_science_team_abbr)


def test_record_missing_a_relied_on_field_fails_loudly():
    with pytest.raises(ValidationError) as exc:
        m.parse_graphql_data(CatalogResult, {"products": [{"productCode": "DP1.00001.001", "productStatus": "ACTIVE"}],
                                             "sites": []})
    assert "productName" in str(exc.value)
    with pytest.raises(ValidationError):
        m.parse_graphql_data(CatalogResult, {"products": [{"productCode": "DP1.00001.001", "productName": "x",
                                                           "productStatus": "ACTIVE", "themes": "Atmosphere"}],
                                             "sites": []})


def test_a_relied_on_field_the_upstream_model_leaves_optional_fails_the_build_naming_it():
    import json

    site = json.loads((SAMPLES / "sites_ABBY.json").read_text())["data"]
    site["siteLatitude"] = None
    with pytest.raises(EcoError, match="siteLatitude") as exc:
        build_sites([m.Site.model_validate(site)])
    assert exc.value.code == "upstream_error"
    product = json.loads((SAMPLES / "products_DP1.00001.001.json").read_text())["data"]
    product["productCode"] = "XX1.00001.001"
    with pytest.raises(EcoError, match="productCode"):
        build_products([m.Product.model_validate(product)])


def test_graphql_spec_size_string_is_read_as_a_number_but_rest_stays_strict():
    spec = {"specNumber": "NEON.DOC.000780", "specSize": "715529"}
    assert m.parse_graphql_data(m.Spec, spec).spec_size == 715529
    with pytest.raises(ValidationError, match="specSize"):
        m.Spec.model_validate(spec)


def test_month_intervals_fold_and_expand_back():
    ms = ["2020-11", "2020-12", "2021-01", "2021-03", "2019-05"]
    ranges = months.to_ranges(ms)
    assert ranges == ["2019-05/2019-05", "2020-11/2021-01", "2021-03/2021-03"]
    assert months.expand(ranges) == sorted(ms)
    assert months.count(ranges) == 5
    assert months.clip(ranges, "2020-12", "2021-02") == ["2020-12/2021-01"]
    assert months.overlaps(ranges, "2021-02", "2021-02") is False
    assert months.overlaps(ranges, None, "2019-05") is True
