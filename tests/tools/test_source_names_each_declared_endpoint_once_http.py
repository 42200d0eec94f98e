"""An answer's `source` names each upstream endpoint once, with its method, and only endpoints
the tool declares (a catalog built during the call is not the tool's endpoint); `origin` is
`cache` when the call made no upstream request. Over HTTP through the SDK client."""

from __future__ import annotations

from typing import Any

from tests.gateway.checks import assert_valid_tool_result
from tests.gateway.conftest import fake_catalog, http_server  # noqa: F401  (fixtures)
from tests.tools.conftest import cold_http_session, upstream_requests
from upstream_sim.biodata import RECORDED_PROTO_UUID

SPEC = "NEON.DOC.003771vF"


def _declared(tool: Any) -> list[str]:
    return tool.meta["endpoints"]


async def test_source_lists_each_declared_endpoint_once_with_its_method_and_cache_when_nothing_was_asked(
        http_server, sim_cfg, sim, active_config):  # noqa: F811
    async with cold_http_session(http_server, sim, active_config) as (client, tools):
        tool = tools["eco_get_prototype_dataset"]
        first = await client.call_tool("eco_get_prototype_dataset", {"uuid": RECORDED_PROTO_UUID})
        body = assert_valid_tool_result(tool, first)
        assert upstream_requests(first) == 2
        assert body["source"]["endpoints"] == ["GET /prototype/datasets/{uuid}", "GET /prototype/data/{uuid}"]
        assert body["source"]["origin"] == "upstream"
        again = await client.call_tool("eco_get_prototype_dataset", {"uuid": RECORDED_PROTO_UUID})
        cached = assert_valid_tool_result(tool, again)
        assert upstream_requests(again) == 0
        assert cached["source"]["origin"] == "cache"
        assert cached["source"]["endpoints"] == body["source"]["endpoints"]

        # The document is read with a HEAD on its declared GET endpoint.
        doc = tools["eco_get_document"]
        read = await client.call_tool("eco_get_document", {"spec_number": SPEC})
        got = assert_valid_tool_result(doc, read)
        assert got["source"]["endpoints"] == ["GET /documents/{specNumber}"]
        for answer, listed in ((body, tool), (cached, tool), (got, doc)):
            endpoints = answer["source"]["endpoints"]
            assert len(endpoints) == len(set(endpoints)) and set(endpoints) <= set(_declared(listed))
