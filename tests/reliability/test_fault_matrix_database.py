"""The fault matrix's "database down" kind: the catalog database made unreachable mid-run, against
the real service processes. A TCP proxy of this module's own (tests/reliability/tcp_proxy.py)
stands between the service and PostgreSQL (the service's DATABASE_URL points at it); a test kills
it, which cuts live connections and refuses new ones, and brings it back on the same port.

With the database down, what needs it answers catalog_unavailable (retryable, its hint naming
the database, not the upstream), what does not keeps answering (the catalog index a process
holds among it), eco_ping reports `catalog.database: "down"`, the ops API answers JSON 503 and
/readyz 503; nothing is internal_error. Once the proxy is back the same process answers again.
Every tool is covered over stdio (fault_matrix.DATABASE_DOWN says what each answers); the HTTP
process adds the ops API, /readyz and calls made while the proxy dies under load.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import httpx
import psycopg
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from catalog.index import CHECK_INTERVAL_S
from mcp_gateway.registry import default_registry
from tests.gateway.checks import assert_valid_tool_result
from tests.reliability.conftest import ServerLog, base_env, fresh_token, serve_http, stdio_params
from tests.reliability.fault_matrix import DATABASE_DOWN, NO_UPSTREAM, ROWS, RestartableSim, prepare
from tests.reliability.tcp_proxy import TcpProxy

pytestmark = pytest.mark.postgres

OPS_TOKEN = "ops-token-of-the-database-down-test"
# eco_ping re-reads the catalog status at most once a second (catalog.status.STATUS_TTL_S),
# and the index looks at the database as often: waiting this long makes the next call ask it.
SETTLE_S = CHECK_INTERVAL_S + 0.3
# Catalog-served calls and calls that need no database, for the load phase.
LOAD_CALLS = [("eco_search_products", {"query": "soil temperature"}), ("eco_get_site", {"site": "HARV"}),
              ("eco_find_locations", {"root": "HARV", "limit": 5}),
              ("eco_search_taxonomy", {"scientific_name": "Quercus alba"}), ("eco_ping", {})]


@dataclass
class Deployment:
    env: dict[str, str]
    proxy: TcpProxy
    sim: RestartableSim


@pytest.fixture(scope="module")
def sim() -> Iterator[RestartableSim]:
    # The module's own simulator, its rate limits out of the way of a few hundred calls.
    own = RestartableSim().restart()
    yield own
    own.kill()


@pytest.fixture(scope="module")
def deployment(postgres_url, sim, tmp_path_factory) -> Iterator[Deployment]:
    """A fresh PostgreSQL database of this module's own, and the service environment pointing at
    it through the proxy. The first service process migrates it; catalogs are built from `sim`
    by the first calls that need them (what a cold server does)."""
    pg = urlparse(postgres_url)
    name = f"eco_dbdown_{uuid.uuid4().hex[:10]}"
    admin = pg._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432).start()
    try:
        userinfo = pg.netloc.rpartition("@")[0]
        via_proxy = pg._replace(netloc=f"{userinfo}@127.0.0.1:{proxy.port}" if userinfo else f"127.0.0.1:{proxy.port}",
                                path=f"/{name}").geturl()
        env = {**base_env(sim, tmp_path_factory.mktemp("dbdown-data")), "DATABASE_URL": via_proxy,
               "ECO_MCP_SERVER__OPS_TOKEN": OPS_TOKEN}
        yield Deployment(env, proxy, sim)
    finally:
        proxy.stop()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def proxy(deployment) -> Iterator[TcpProxy]:
    """The module's proxy, listening at the start of the test and again at its end."""
    if not deployment.proxy.running:
        deployment.proxy.start()
    yield deployment.proxy
    if not deployment.proxy.running:
        deployment.proxy.start()


def _arguments(tool: str) -> dict[str, Any]:
    return ROWS[tool].arguments if tool in ROWS else NO_UPSTREAM[tool]


def _database_down_error(result: Any, sim: RestartableSim) -> dict[str, Any]:
    """`result` is catalog_unavailable, retryable, its hint naming the database, not the upstream."""
    assert result.is_error, result.structured_content
    err = result.structured_content["error"]
    assert err["code"] == "catalog_unavailable", err
    assert err["retryable"] is True, err
    assert "database" in err["hint"].lower(), err
    assert str(sim.ports[0]) not in err["hint"] + err["message"], err  # not the upstream's address
    assert "password" not in str(err).lower()
    return err


def _ping_database(result: Any) -> str:
    assert not result.is_error, result.structured_content
    return result.structured_content["catalog"]["database"]


def _no_internal_error(log: ServerLog) -> None:
    text = log.text()
    assert "internal_error" not in text, text[text.find("internal_error") - 200:][:3000]


# ------------------------------------------------------------------------------ every tool

def test_every_registered_tool_has_a_database_down_entry():
    assert set(DATABASE_DOWN) == set(default_registry().names())
    assert set(DATABASE_DOWN) <= set(ROWS) | set(NO_UPSTREAM)


async def test_over_stdio_every_tool_answers_or_is_catalog_unavailable_while_the_database_is_down(
        deployment, proxy, tmp_path):
    sim = deployment.sim
    downloads = tmp_path / "downloads"
    prepare("eco_query_tables", downloads)
    env = {**deployment.env, "ECO_TOKEN": fresh_token(sim), "ECO_MCP_DOWNLOADS__DIRECTORY": str(downloads),
           "ECO_MCP_DOWNLOADS__ALLOWED_HOSTS": "127.0.0.1,localhost"}
    log = tmp_path / "stdio.log"

    async def every_tool(client: Client, listed: dict[str, Any], phase: str) -> None:
        results = {tool: await client.call_tool(tool, _arguments(tool)) for tool in sorted(DATABASE_DOWN)}
        got = {tool: (r.structured_content or {}).get("error", {}).get("code") for tool, r in results.items()}
        down = phase in ("cold", "warm")
        want = {tool: getattr(DATABASE_DOWN[tool], phase) if down else None for tool in results}
        assert got == want, f"{phase}: {sorted(set(got.items()) - set(want.items()))}"
        for tool, result in results.items():
            if want[tool] is None:
                assert_valid_tool_result(listed[tool], result)
            else:
                _database_down_error(result, sim)
        assert _ping_database(results["eco_ping"]) == ("down" if down else "up")

    with log.open("w") as errlog:
        async with Client(stdio_client(stdio_params(env), errlog=errlog), mode="2026-07-28") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            # The first call waits for the server's set-up (migrations: the database is up); this
            # one reads no catalog, so the process holds none when the proxy dies.
            assert not (await client.call_tool("eco_search_taxonomy", _arguments("eco_search_taxonomy"))).is_error
            proxy.stop()
            await every_tool(client, listed, "cold")
            proxy.start()
            await asyncio.sleep(SETTLE_S)
            await every_tool(client, listed, "up")  # the same process, no restart
            proxy.stop()  # now it holds the catalog index
            await asyncio.sleep(SETTLE_S)
            await every_tool(client, listed, "warm")
            proxy.start()
            await asyncio.sleep(SETTLE_S)
            await every_tool(client, listed, "recovered")
    _no_internal_error(ServerLog(log))


async def test_a_stdio_server_started_while_the_database_is_down_serves_and_recovers_without_restart(
        deployment, proxy, tmp_path, tmp_path_factory):
    sim = deployment.sim
    # A data folder of its own: no schema record, so the set-up must reach the database to migrate.
    env = {**deployment.env, **base_env(sim, tmp_path_factory.mktemp("dbdown-cold-start")),
           "DATABASE_URL": deployment.env["DATABASE_URL"]}
    log = tmp_path / "stdio.log"
    proxy.stop()
    with log.open("w") as errlog:
        async with Client(stdio_client(stdio_params(env), errlog=errlog), mode="2026-07-28") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            taxonomy = await client.call_tool("eco_search_taxonomy", _arguments("eco_search_taxonomy"))
            assert_valid_tool_result(listed["eco_search_taxonomy"], taxonomy)  # needs no database
            _database_down_error(await client.call_tool("eco_search_sites", {"query": "HARV"}), sim)
            assert _ping_database(await client.call_tool("eco_ping", {})) == "down"
            proxy.start()
            await asyncio.sleep(SETTLE_S)
            sites = await client.call_tool("eco_search_sites", {"query": "HARV"})  # the same process
            assert_valid_tool_result(listed["eco_search_sites"], sites)
            assert _ping_database(await client.call_tool("eco_ping", {})) == "up"
    _no_internal_error(ServerLog(log))
    assert log.read_text().count("the database is unreachable") == 1


# ------------------------------------------------------------------------------ over HTTP

@contextlib.asynccontextmanager
async def _ops(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {OPS_TOKEN}"},
                                 timeout=30) as client:
        yield client


async def _assert_ops_database_down(ops: httpx.AsyncClient) -> None:
    for path in ("/api/ops/catalogs", "/api/ops/refresh-log"):
        resp = await ops.get(path)
        assert resp.status_code == 503, (path, resp.status_code, resp.text[:500])
        assert resp.headers["content-type"].startswith("application/json"), resp.headers
        body = resp.json()
        assert body["code"] == "database_unavailable" and "database" in body["detail"], body
    ready = await ops.get("/readyz")
    assert ready.status_code == 503 and ready.json()["reason"] == "database unavailable", ready.text


async def test_over_http_the_database_dying_under_load_degrades_and_the_service_recovers_without_restart(
        deployment, proxy, tmp_path):
    sim = deployment.sim
    with serve_http(deployment.env, tmp_path / "http.log") as service:
        base = service.url.removesuffix("/mcp")
        async with Client(service.url, mode="2026-07-28") as client, _ops(base) as ops:
            # Cold: the process has not read the catalog yet.
            proxy.stop()
            _database_down_error(await client.call_tool("eco_search_products", {"query": "soil"}), sim)
            assert not (await client.call_tool("eco_search_taxonomy", {"scientific_name": "Quercus alba"})).is_error
            assert _ping_database(await client.call_tool("eco_ping", {})) == "down"
            await _assert_ops_database_down(ops)

            # Back: the very next call reconnects, in the same process.
            proxy.start()
            assert not (await client.call_tool("eco_search_products", {"query": "soil"})).is_error
            assert (await ops.get("/api/ops/catalogs")).status_code == 200
            await asyncio.sleep(SETTLE_S)
            assert _ping_database(await client.call_tool("eco_ping", {})) == "up"
            assert (await ops.get("/readyz")).status_code == 200

            # Under load: the proxy dies while calls are in flight (live connections cut), stays
            # down, then comes back; every answer is a result or catalog_unavailable.
            outcomes: Counter[str] = Counter()
            stop = asyncio.Event()

            async def caller(k: int) -> None:
                i = k
                while not stop.is_set():
                    tool, args = LOAD_CALLS[i % len(LOAD_CALLS)]
                    i += 1
                    result = await client.call_tool(tool, args)
                    if result.is_error:
                        outcomes[f"{tool}: {_database_down_error(result, sim)['details'].get('cause')}"] += 1
                    else:
                        outcomes["ok"] += 1

            callers = [asyncio.create_task(caller(k)) for k in range(6)]
            await asyncio.sleep(0.5)
            proxy.stop()
            await asyncio.sleep(SETTLE_S * 2)
            async with asyncio.timeout(60):  # down until some call has met the outage (a slow machine)
                while outcomes.total() == outcomes["ok"]:
                    await asyncio.sleep(0.1)
            proxy.start()
            await asyncio.sleep(SETTLE_S)
            stop.set()
            await asyncio.gather(*callers)
            assert outcomes["ok"] and outcomes.total() > outcomes["ok"], outcomes  # both seen

            # Warm: the index held answers catalog searches; what reads the database does not.
            proxy.stop()
            await asyncio.sleep(SETTLE_S)
            assert not (await client.call_tool("eco_search_products", {"query": "soil"})).is_error
            _database_down_error(await client.call_tool("eco_find_locations", {"root": "HARV"}), sim)
            assert _ping_database(await client.call_tool("eco_ping", {})) == "down"
            await _assert_ops_database_down(ops)

            proxy.start()
            assert not (await client.call_tool("eco_find_locations", {"root": "HARV"})).is_error
            assert (await ops.get("/api/ops/catalogs")).status_code == 200
            await asyncio.sleep(SETTLE_S)
            assert _ping_database(await client.call_tool("eco_ping", {})) == "up"
        print(f"under load: {dict(outcomes)}")
    _no_internal_error(service.log)
