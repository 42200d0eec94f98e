"""Shared by the samples and taxonomy tests: the configuration pointed at the simulator (no
catalog needed: these tools read the upstream only), and `call`, which runs a tool through the
gateway's real pipeline with a token and an elicitation capability of the test's choosing and
checks every success against the tool's output schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import mcp_types as types
import pytest

from eco_core import config as eco_config
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from tests.tools.conftest import Outcome, sim_config
from upstream.client import close_clients


@pytest.fixture
async def bio_cfg(sim):
    """A configuration of its own per test: a new upstream-client generation, so cache keys
    written by earlier tests of this process are not read."""
    sim.faults.clear()
    cfg = sim_config(sim)
    with eco_config.use_config(cfg):
        yield cfg
        await close_clients()


def used(outcome: Outcome) -> int:
    """Upstream requests plus cache hits: what one call needed, whether or not another process
    (sharing Redis) already cached it."""
    return outcome.meta["requests"] + outcome.meta["cacheHits"]


async def call(cfg: eco_config.EcoConfig, name: str, arguments: dict[str, Any] | None = None, *,
               token: str | None = None, elicitation: bool = False, protocol_version: str = "2026-07-28",
               request_state: str | None = None, input_responses: dict[str, Any] | None = None) -> Any:
    spec = default_registry().get(name)
    assert spec is not None, name
    ctx = CallContext(cfg=cfg, transport="stdio", protocol_version=protocol_version,
                      token_source="config" if token else "none", client_elicitation=elicitation,
                      request_state=request_state, input_responses=input_responses)
    result = await execute(spec, arguments or {}, ctx, token=token)
    if isinstance(result, types.CallToolResult) and not result.is_error:
        jsonschema.Draft202012Validator(spec.tool.output_schema).validate(result.structured_content)
    return result


async def run(cfg: eco_config.EcoConfig, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Outcome:
    return Outcome(await call(cfg, name, arguments, **kw))
