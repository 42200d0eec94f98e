"""Discovery-tool fixtures: the full simulated catalog (built once per module by the catalog
engineers' `catalog_module`), a configuration pointing the upstream client at the simulator,
and `run_tool`, which calls a tool through the gateway's real pipeline (argument parsing,
envelope, byte budget, errors) and checks every success against the tool's output schema."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import jsonschema
import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from mcp import Client

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.catalog.conftest import catalog_module, fresh_index, mini_client  # noqa: F401  (fixtures)
from upstream.client import close_clients


def sim_config(sim: Any, **flags: Any) -> eco_config.EcoConfig:
    base = {"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url}
    base.update({k.replace("__", "."): v for k, v in flags.items()})
    return eco_config.load_config(flags=base, env={}, warn=False)



@contextlib.asynccontextmanager
async def cold_http_session(http_server: Callable[..., Any], sim: Any,
                            active_config: Callable[[Any], Any]) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    """The SDK's MCP client against the real server over HTTP, with the simulator behind it, and
    the tools it lists by name. The configuration is a new one, so the server's upstream cache
    starts cold (a new namespace); it stays active for the rest of the test because the server
    thread's upstream client reads the active configuration."""
    cfg = sim_config(sim, server__transport="http")
    active_config(cfg)
    with http_server(cfg) as srv:
        async with Client(srv.url, mode="2026-07-28") as client:
            yield client, {t.name: t for t in (await client.list_tools()).tools}


def next_step(payload: dict[str, Any], tool: str) -> dict[str, Any]:
    """The arguments the answer's nextSteps propose for `tool`."""
    return next(s["arguments"] for s in payload["nextSteps"] if s["tool"] == tool)


def upstream_requests(result: Any) -> int:
    return result.meta["io.eco-mcp/upstream"]["requests"]


@pytest.fixture
async def sim_cfg(sim, catalog_module, db):  # noqa: F811  (the imported fixture)
    """The simulator's configuration, active; the catalog is warm; the shared upstream client of
    this test's event loop is closed afterwards (httpx clients cannot cross loops)."""
    sim.faults.clear()
    cfg = sim_config(sim)
    with eco_config.use_config(cfg):
        yield cfg
        await close_clients()
        # ORM calls from async code ran on asgiref's one thread-sensitive worker: close its
        # connection too, or the test database cannot be dropped at the end of the session.
        await sync_to_async(connections.close_all)()


class Outcome:
    def __init__(self, result: Any) -> None:
        self.result = result
        self.meta = (result.meta or {}).get("io.eco-mcp/upstream", {})

    @property
    def ok(self) -> dict[str, Any]:
        assert not self.result.is_error, self.result.structured_content
        return self.result.structured_content

    @property
    def error(self) -> dict[str, Any]:
        assert self.result.is_error, "expected an error result"
        return self.result.structured_content["error"]

    @property
    def requests(self) -> int:
        return self.meta["requests"]


@pytest.fixture
def run_tool(sim_cfg):
    async def run(name: str, arguments: dict[str, Any] | None = None, *, transport: str = "stdio") -> Outcome:
        registry = default_registry()
        spec = registry.get(name)
        assert spec is not None, name
        # The tools this transport lists, as the server tells every call (reads name only those).
        listed = frozenset(s.name for s in registry.listed(http=transport == "http"))
        call = CallContext(cfg=sim_cfg, transport=transport, protocol_version="2026-07-28", listed_tools=listed)
        result = await execute(spec, arguments or {}, call, token=None)
        if not result.is_error:
            jsonschema.Draft202012Validator(spec.tool.output_schema).validate(result.structured_content)
        return Outcome(result)

    return run


def error_of(outcome: Outcome, code: str, field: str | None = None) -> dict[str, Any]:
    """The error, checked for its stable code and (when given) that the message names the field."""
    err = outcome.error
    assert err["code"] == code, err
    if field is not None:
        assert field in err["message"], err
    return err
