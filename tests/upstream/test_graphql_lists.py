"""graphql_lists: a catalog reply read a record at a time gives what the whole parse gives, and
every reply the whole parse refuses is refused the same way, before anything is returned."""

from __future__ import annotations

import json

import pytest

from catalog.services.graphql_queries import CATALOG_QUERY, CatalogResult
from eco_core.errors import EcoError
from tests.upstream.conftest import reply, sample
from upstream import models as m


def _catalog_body(**extra: object) -> dict:
    products = json.loads(sample("graphql/derived_products_catalog.json"))["data"]["products"]
    sites = json.loads(sample("graphql/derived_sites_catalog.json"))["data"]["sites"]
    return {"data": {"products": products, "sites": sites}, **extra}


def _answering(body: bytes | dict):
    return lambda request: reply(200, body)


async def test_records_read_one_at_a_time_equal_the_whole_parse(client_factory):
    body = _catalog_body(extensions={"cost": 3})
    body["data"]["products"][0]["unlistedRatio"] = 0.25  # kept by `extra` as json.loads gives it: a float
    lists = await client_factory(_answering(body)).graphql_lists(CATALOG_QUERY, model=CatalogResult)
    whole = m.parse_graphql_data(CatalogResult, body["data"])
    assert isinstance(lists["products"], m.GraphQLItems)  # read item by item, not the whole parse's lists
    assert list(lists["products"]) == whole.products and list(lists["sites"]) == whole.sites
    assert type(next(iter(lists["products"])).model_extra["unlistedRatio"]) is float  # not ijson's Decimal
    # Read again, the same records: the lists are the reply's items, not a one-shot stream.
    assert [p.product_code for p in lists["products"]] == [p.product_code for p in whole.products]


async def test_whitespace_and_unknown_data_keys_are_read_like_the_whole_parse(client_factory):
    body = json.dumps(_catalog_body(), indent=2).replace('"sites"', '"other": [1, {"a": null}],\n "sites"', 1)
    lists = await client_factory(_answering(body.encode())).graphql_lists(CATALOG_QUERY, model=CatalogResult)
    assert len(lists["products"]) == len(_catalog_body()["data"]["products"]) and len(lists["sites"]) > 0


@pytest.mark.parametrize(("body", "code"), [
    (sample("graphql/error_field_undefined_Query.json"), "graphql_error"),
    ({"data": {"products": [], "sites": []}, "errors": [{"message": "partly failed"}]}, "graphql_error"),
    ({"data": None}, "upstream_error"),
    ({"data": {"products": []}}, "upstream_error"),  # a list missing
    ({"data": {"products": [{"productCode": "DP1.00001.001"}], "sites": []}}, "upstream_error"),  # an item short
    ({"data": {"products": [], "sites": [None]}}, "upstream_error"),
    (b'{"data": {"products": [], "sites": []', "upstream_error"),  # cut short
    # An escaped lone surrogate: refused by the whole parse, read as "?" by ijson's parser (yajl).
    (json.dumps(_catalog_body()).replace('"siteName": "', '"siteName": "\\ud800', 1).encode(), "upstream_error"),
])
async def test_a_reply_the_whole_parse_refuses_is_refused_the_same_way(client_factory, body, code):
    with pytest.raises(EcoError) as lists_exc:
        await client_factory(_answering(body)).graphql_lists(CATALOG_QUERY, model=CatalogResult)
    with pytest.raises(EcoError) as whole_exc:
        await client_factory(_answering(body)).graphql(CATALOG_QUERY, model=CatalogResult)
    assert lists_exc.value.code == whole_exc.value.code == code
    assert lists_exc.value.message == whole_exc.value.message


async def test_a_refused_reply_counts_against_the_breaker_as_the_whole_parse_does(client_factory):
    client = client_factory(_answering({"data": None}))
    for _ in range(10):
        with pytest.raises(EcoError):
            await client.graphql_lists(CATALOG_QUERY, model=CatalogResult)
    assert client.graphql_available is False
    with pytest.raises(EcoError) as exc:
        await client.graphql_lists(CATALOG_QUERY, model=CatalogResult)
    assert exc.value.code == "upstream_unavailable"


async def test_the_reader_returns_none_for_json_it_does_not_follow():
    items = m.list_items(CatalogResult)
    # A dotted key: ijson's prefix "data.sites.item" would take this top-level list's items as sites.
    dotted = json.dumps({"data": {"products": [], "sites": []}, "data.sites": _catalog_body()["data"]["sites"]})
    for body in (b'{"data": {"products": [], "products": [], "sites": []}}', b'{"data": {"products": [], "sites": []}} x',
                 b'[]', b'\xff', dotted.encode()):
        assert m.read_graphql_lists(body, items) is None
