"""Catalog test fixtures.

`mini_client` implements `upstream.protocol.CatalogUpstream` (products, sites, releases,
location_sites, location, graphql, graphql_available: the same signatures and the same typed
models as the real client, which mypy checks) over real sockets to the simulator, with nothing
else (no cache, no retries, so the refresh's `fresh=True` needs nothing here), so refresh tests
see exactly what the simulator says and count every request. `catalog_built` fills the test database
with a full catalog from the simulator.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from catalog import index
from catalog.services import refresh_catalogs
from eco_core.errors import EcoError
from upstream import models as m
from upstream.context import current
from upstream.http import RequestKind

if TYPE_CHECKING:
    from upstream.protocol import CatalogUpstream

M = TypeVar("M", bound=BaseModel)


class MiniClient:
    def __init__(self, base_url: str, graphql_url: str) -> None:
        self.base_url = base_url
        self.graphql_url = graphql_url
        self.graphql_available = True
        self.calls: list[str] = []

    async def _send(self, method: str, url: str, **kw: Any) -> Any:
        self.calls.append(f"{method} {url}")
        acct = current()
        if acct is not None:
            acct.requests += 1
        async with httpx.AsyncClient(timeout=60) as http:
            resp = await http.request(method, url, **kw)
        if resp.status_code >= 400:
            raise EcoError("upstream_error", f"HTTP {resp.status_code} from {url}")
        try:
            return resp.json()
        except ValueError as exc:
            raise EcoError("upstream_error", f"unparseable reply from {url}") from exc

    async def _get(self, path: str, **params: Any) -> Any:
        return (await self._send("GET", self.base_url + path, params=params or None))["data"]

    async def products(self, release: str | None = None, *, fresh: bool = False) -> list[m.Product]:
        data = await self._get("/products", **({"release": release} if release else {}))
        return [m.Product.model_validate(p) for p in data]

    async def sites(self, release: str | None = None, *, fresh: bool = False) -> list[m.Site]:
        data = await self._get("/sites", **({"release": release} if release else {}))
        return [m.Site.model_validate(s) for s in data]

    async def releases(self, *, fresh: bool = False) -> list[m.Release]:
        return [m.Release.model_validate(r) for r in await self._get("/releases")]

    async def location_sites(self, *, fresh: bool = False) -> list[m.Location]:
        return [m.Location.model_validate(x) for x in await self._get("/locations/sites")]

    async def location(self, name: str, *, hierarchy: bool = False, location_type: str | None = None,
                       history: bool = False, fresh: bool = False) -> m.Location:
        params = {"hierarchy": "true"} if hierarchy else {}
        if location_type:
            params["locationType"] = location_type
        if history:
            params["history"] = "true"
        return m.Location.model_validate(await self._get(f"/locations/{name}", **params))

    async def graphql(self, query: str, variables: dict[str, Any] | None = None, *, model: type[M],
                      operation_name: str | None = None, kind: RequestKind = "catalog", use_breaker: bool = True,
                      send_token: bool | None = None) -> M:
        body = await self._send("POST", self.graphql_url, json={"query": query, "variables": variables or {}})
        if body.get("errors"):
            raise EcoError("graphql_error", body["errors"][0].get("message", "GraphQL error"))
        return m.parse_graphql_data(model, body["data"])

    async def graphql_lists(self, query: str, *, model: type[M], kind: RequestKind = "catalog"
                            ) -> dict[str, Iterable[Any]]:
        whole = await self.graphql(query, model=model, kind=kind)
        return {name: getattr(whole, name) for name in type(whole).model_fields}


if TYPE_CHECKING:
    _fits: type[CatalogUpstream] = MiniClient  # mypy: the fake implements the client's Protocol


class NoUpstream:
    """Stands in for the upstream client where a read must be served by the catalog alone."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the read asked the upstream ({name}) although the catalog holds the answer")


def family_call(cfg: Any, upstream: Any = None) -> Any:
    """The call context a family's read gets, its upstream client `upstream` (by default one the
    read must never ask)."""
    from families.call import CallContext

    return CallContext(cfg=cfg, transport="stdio", protocol_version="2026-07-28",
                       upstream=upstream if upstream is not None else NoUpstream())


@pytest.fixture
def eco_cfg(sim):
    """The default configuration with the upstream pointed at the simulator, installed as the
    active one: the catalogs these tests build come from the simulator, and a catalog is served
    only for the upstream it was built from."""
    from eco_core import config as eco_config

    cfg = eco_config.load_config(env={"ECO_MCP_ECO__BASE_URL": sim.base_url,
                                      "ECO_MCP_ECO__GRAPHQL_URL": sim.graphql_url}, warn=False)
    with eco_config.use_config(cfg):
        yield cfg


@pytest.fixture
def mini_client(fresh_sim) -> MiniClient:
    return MiniClient(fresh_sim.base_url, fresh_sim.graphql_url)


@pytest.fixture
def fresh_index():
    index.reset()
    yield index
    index.reset()


@pytest.fixture
def catalog_built(db, mini_client, eco_cfg, fresh_index):
    outcomes = async_to_sync(refresh_catalogs)(client=mini_client, cfg=eco_cfg)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return outcomes


def _wipe() -> None:
    from catalog.models import (
        CatalogRefresh,
        CatalogState,
        LocationRow,
        ProductRow,
        ProductSiteAvailabilityRow,
        ReleaseRow,
        SiteRow,
    )

    for model in (ProductRow, ProductSiteAvailabilityRow, SiteRow, ReleaseRow, LocationRow, CatalogState, CatalogRefresh):
        model.objects.all().delete()


@pytest.fixture(scope="module")
def catalog_module(django_db_setup, django_db_blocker, sim):
    """A full catalog built once for a module (committed), removed again after it, so tests of
    other modules still start from an empty catalog."""
    from eco_core.config import load_config

    sim.reset()
    client = MiniClient(sim.base_url, sim.graphql_url)
    with django_db_blocker.unblock():
        _wipe()
        outcomes = async_to_sync(refresh_catalogs)(client=client, cfg=load_config(env={}, warn=False))
        assert all(o.ok for o in outcomes), [o.error for o in outcomes]
        index.reset()
        built = index.get_index()
    yield built
    with django_db_blocker.unblock():
        _wipe()
    index.reset()


@pytest.fixture
def idx(catalog_module, db, eco_cfg):
    """The in-memory index over the module's catalog (built once); each test's writes roll back.
    The simulator's configuration is active, since the catalog is served only for its upstream."""
    return catalog_module


@pytest.fixture
def sim_cfg(fresh_sim):
    """The active configuration pointed at the simulator (for the real upstream client), with the
    client's answer cache off so each test sees what the simulator says now."""
    from eco_core import config as eco_config

    cfg = eco_config.load_config(env={"ECO_MCP_ECO__BASE_URL": fresh_sim.base_url,
                                      "ECO_MCP_ECO__GRAPHQL_URL": fresh_sim.graphql_url,
                                      "ECO_MCP_CACHE__ENABLED": "false"}, warn=False)
    with eco_config.use_config(cfg):
        yield cfg
