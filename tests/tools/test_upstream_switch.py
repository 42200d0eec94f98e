"""A catalog is never served for an upstream it was not built from.

The catalog is built through eco_search_products against one simulator; the service is then
pointed at another upstream, as a restart with other settings would. Against a second simulator
(another seed) the catalog is rebuilt from it before the answer; against an address nobody
answers on, the tools answer catalog_unavailable saying why, and nothing of the first catalog is
served. /readyz's readiness, the admin's status and eco_ping say which upstream each came from."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from catalog import index
from catalog.models import CATALOGS, CatalogState, ProductRow
from catalog.services import refresh_catalogs, warm
from catalog.status import catalog_status, readiness
from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from upstream.client import UpstreamClient, close_clients

UNREACHABLE = "http://127.0.0.1:9"  # discard port: connection refused
MARKER = "Zqxfirstupstream"


def _cfg(base_url: str, graphql_url: str) -> eco_config.EcoConfig:
    return eco_config.load_config(flags={"eco.base_url": base_url, "eco.graphql_url": graphql_url,
                                         "eco.retries.max_attempts": 1, "cache.enabled": False},
                                  env={}, warn=False)


def _call(cfg: eco_config.EcoConfig, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        with eco_config.use_config(cfg):
            try:
                spec = default_registry().get(name)
                assert spec is not None
                call = CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28")
                result = await execute(spec, arguments, call, token=None)
                if warm._background is not None:
                    await warm._background  # a refresh-ahead it started ends before its client closes
                return {"isError": result.is_error, **result.structured_content}
            finally:
                await close_clients()

    with eco_config.use_config(cfg):
        index.reset()  # a restarted process starts without an index
        return async_to_sync(run)()


def _build(cfg: eco_config.EcoConfig) -> None:
    async def run() -> None:
        client = UpstreamClient(cfg)
        try:
            outcomes = await refresh_catalogs(client=client, cfg=cfg)
            assert all(o.ok for o in outcomes), [o.error for o in outcomes]
        finally:
            await client.aclose()

    async_to_sync(run)()


@pytest.fixture(scope="module")
def other_sim():
    from upstream_sim.server import SimServer

    with SimServer(seed=7, port=0) as server:
        yield server


@pytest.fixture
def built_from_first(transactional_db, fresh_sim):
    """Every catalog as a run against the simulator left it. One product is renamed to a marker:
    the same simulator code with another seed publishes the same product codes, so the marker
    stands for what only the first upstream said."""
    cfg = _cfg(fresh_sim.base_url, fresh_sim.graphql_url)
    _build(cfg)
    for state in CatalogState.objects.all():
        assert (state.rest_base, state.graphql_url) == (fresh_sim.base_url, fresh_sim.graphql_url), state.catalog
    ProductRow.objects.filter(product_code="DP1.00002.001").update(product_name=f"{MARKER} air temperature")
    first = _call(cfg, "eco_search_products", {"query": MARKER})
    assert [i["productCode"] for i in first["items"]] == ["DP1.00002.001"], first
    yield first
    index.reset()


def test_pointed_at_another_simulator_the_catalog_is_rebuilt_from_it_before_the_answer(built_from_first, fresh_sim,
                                                                                       other_sim):
    before = other_sim.requests.count(r"^/(graphql|api/v0/products)")
    cfg = _cfg(other_sim.base_url, other_sim.graphql_url)
    answer = _call(cfg, "eco_search_products", {"query": MARKER})
    assert not answer["isError"], answer
    assert answer["items"] == [], answer
    assert other_sim.requests.count(r"^/(graphql|api/v0/products)") > before
    named = _call(cfg, "eco_get_product", {"product": "DP1.00002.001"})
    assert not named["isError"] and MARKER not in named["productName"], named
    for name in CATALOGS:
        state = CatalogState.objects.get(catalog=name)
        assert (state.rest_base, state.graphql_url) == (other_sim.base_url, other_sim.graphql_url)
    with eco_config.use_config(cfg):
        status = catalog_status(cfg)
    assert status["products"]["restBase"] == other_sim.base_url and status["products"]["upstreamMismatch"] is None


def test_pointed_at_an_unreachable_upstream_the_tools_answer_catalog_unavailable_and_say_why(built_from_first,
                                                                                              fresh_sim):
    cfg = _cfg(f"{UNREACHABLE}/api/v0", f"{UNREACHABLE}/graphql")
    for tool, args in (("eco_search_products", {"query": "temperature"}), ("eco_search_sites", {}),
                       ("eco_list_releases", {}), ("eco_find_locations", {"root": "D01", "location_type": "SITE"})):
        answer = _call(cfg, tool, args)
        assert answer["isError"] and MARKER not in str(answer), (tool, answer)
        err = answer["error"]
        assert err["code"] == "catalog_unavailable", (tool, err)
        # Why: where the catalog came from and where the service points now.
        assert fresh_sim.base_url in err["message"] and UNREACHABLE in err["message"], err
        assert "127.0.0.1:9" in err["hint"] and "--check" in err["hint"] and "ECO_MCP_ECO__BASE_URL" in err["hint"]
    with eco_config.use_config(cfg):
        ready, body = readiness(cfg)
        status = catalog_status(cfg)
    assert not ready and body["status"] == "warming" and set(body["upstreamMismatch"]) >= {"products", "sites"}
    assert status["products"]["restBase"] == fresh_sim.base_url
    assert UNREACHABLE in status["products"]["upstreamMismatch"]


def test_eco_ping_shows_which_upstream_each_catalog_came_from(built_from_first, fresh_sim):
    same = _call(_cfg(fresh_sim.base_url, fresh_sim.graphql_url), "eco_ping", {})
    # Built from the configured upstream, which the answer's apiBaseUrl names: not said again per catalog.
    assert same["apiBaseUrl"] == fresh_sim.base_url and same["catalog"]["ready"]
    assert not {"restBase", "graphqlUrl", "upstreamMismatch"} & set(same["catalog"]["catalogs"]["products"])
    moved = _call(_cfg(f"{UNREACHABLE}/api/v0", f"{UNREACHABLE}/graphql"), "eco_ping", {})
    assert moved["catalog"]["ready"] is False
    products = moved["catalog"]["catalogs"]["products"]
    assert (products["restBase"], products["graphqlUrl"]) == (fresh_sim.base_url, fresh_sim.graphql_url)
    assert fresh_sim.base_url in products["upstreamMismatch"]
