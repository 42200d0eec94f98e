"""Hostile `X-API-Token` header values, over a real socket against the real
server with the simulator behind it: whatever a caller puts in the header, no call fails, no other
caller's answer changes by a byte, the redaction registry stays bounded, and tokens are still
masked where they must be (the caller's own result, log lines)."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

import httpx
import mcp_types as types
import pytest

from eco_core import config as eco_config
from eco_core import redact
from families.call import CallContext
from mcp_gateway.calls import execute
from mcp_gateway.registry import default_registry
from mcp_gateway.tokens import choose_token
from tests.gateway.conftest import make_cfg
from tests.gateway.wire import modern_request, reply
from tests.tools.conftest import catalog_module, sim_cfg, sim_config  # noqa: F401  (fixtures)

PRODUCT_ARGS = {"product": "DP1.00001.001"}
SEARCH_ARGS = {"query": "wind speed", "limit": 3}
# JSON fragments, field names and literals of our own results, quoting characters, unicode, the
# mask itself: each used to be registered as a secret and substring-replaced in every answer.
HOSTILE = [
    '":{"input":"',
    "productCode",
    "structuredContent",
    "true",
    '"',
    "\\",
    '","notes":[],"x":"',
    "DP1.00001.001",
    "********",
    "tøkén-ünïcødé-✓-値",
    "null,null,null",
    "a value: with spaces, and; separators",
]
CANARY = "canary-config-TOKEN-4e8d1b7a52"


async def _call(http: httpx.AsyncClient, url: str, tool: str, args: dict[str, Any], *,
                token: str | None = None, rid: int = 1) -> dict[str, Any]:
    body, headers = modern_request("tools/call", {"name": tool, "arguments": args}, rid=rid)
    sent: dict[str, Any] = dict(headers)
    if token is not None:
        sent["X-API-Token"] = token.encode()  # bytes: httpx would refuse non-ASCII text
    resp = await http.post(url, json=body, headers=sent)
    assert resp.status_code == 200, resp.text
    return reply(resp)


def _ok(message: dict[str, Any]) -> dict[str, Any]:
    """The tool result of a JSON-RPC reply that is no protocol error (-32603 was the bug)."""
    assert "error" not in message, message
    result = message["result"]
    if result.get("isError"):
        assert result["structuredContent"]["error"]["code"] != "internal_error", result
    return result


def _http_cfg(sim: Any, active_config: Any, **flags: Any) -> eco_config.EcoConfig:
    # The server thread's upstream client reads the active configuration.
    return active_config(sim_config(sim, server__transport="http", **flags))


@pytest.fixture
def frozen_catalog_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stops the catalog's age (`indexAgeSeconds`) ticking, so two answers can be byte-equal (every
    age comes from catalog.index's clock)."""
    from catalog import index

    frozen = datetime.now().astimezone()

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return frozen

    monkeypatch.setattr(index, "datetime", Frozen)


@pytest.mark.usefixtures("sim_cfg", "frozen_catalog_clock")
@pytest.mark.parametrize("honoured", [False, True], ids=["header-ignored", "header-honoured"])
async def test_hostile_token_headers_never_change_another_callers_answer(http_server, sim, active_config, honoured):
    cfg = _http_cfg(sim, active_config, server__allow_insecure_header_token=honoured)
    with http_server(cfg) as srv:
        async with httpx.AsyncClient(timeout=60) as http:
            before = {tool: _ok(await _call(http, srv.url, tool, args))
                      for tool, args in (("eco_get_product", PRODUCT_ARGS), ("eco_search_products", SEARCH_ARGS))}
            for value in HOSTILE:
                if honoured and not value.isascii():
                    # No token the upstream could be sent: the request is refused, naming the header.
                    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
                    resp = await http.post(srv.url, json=body, headers={**headers, "X-API-Token": value.encode()})
                    assert resp.status_code == 400 and resp.json()["error"]["data"]["field"] == "X-API-Token"
                    continue
                ping = _ok(await _call(http, srv.url, "eco_ping", {}, token=value))
                assert not ping.get("isError")
                assert ping["structuredContent"]["tokenSource"] == ("request" if honoured else "none")
                # The hostile caller's own calls answer too (a result or a stable error code).
                _ok(await _call(http, srv.url, "eco_get_product", PRODUCT_ARGS, token=value))
                _ok(await _call(http, srv.url, "eco_search_products", SEARCH_ARGS, token=value))
            after = {tool: _ok(await _call(http, srv.url, tool, args))
                     for tool, args in (("eco_get_product", PRODUCT_ARGS), ("eco_search_products", SEARCH_ARGS))}
    for tool in before:
        assert not before[tool].get("isError"), before[tool]
        assert after[tool]["content"][0]["text"] == before[tool]["content"][0]["text"], tool
        dump = json.dumps(after[tool]["structuredContent"], sort_keys=True, ensure_ascii=False)
        assert dump == json.dumps(before[tool]["structuredContent"], sort_keys=True, ensure_ascii=False), tool
    assert before["eco_get_product"]["structuredContent"]["productCode"] == "DP1.00001.001"


@pytest.mark.parametrize("honoured", [False, True], ids=["header-ignored", "header-honoured"])
async def test_ten_thousand_distinct_header_values_do_not_grow_the_redaction_registry(fake_catalog, honoured):
    # In process through the gateway's own call path (server.call_tool does exactly this per
    # request): 10,000 HTTP round trips would add a minute and test nothing more.
    cfg = make_cfg(server__allow_insecure_header_token=honoured)
    ping = default_registry().get("eco_ping")
    assert ping is not None
    size_before = redact.registry_size()
    for i in range(10_000):
        choice = choose_token(cfg, {"x-api-token": f'distinct-header-value-{i:05d}":{{"input":"'})
        call = CallContext(cfg=cfg, transport="http", protocol_version="2026-07-28", token_source=choice.source,
                           token_header_ignored=choice.header_ignored)
        result = await execute(ping, {}, call, token=choice.token)
        assert isinstance(result, types.CallToolResult) and not result.is_error
    # Honoured or not, a header value used for no upstream request leaves nothing behind.
    assert redact.registry_size() == size_before
    assert (choice.source, result.structured_content["tokenSource"]) == (("request",) * 2 if honoured else ("none",) * 2)


def test_request_tokens_used_upstream_are_remembered_for_log_lines_within_a_fixed_bound():
    for i in range(10_000):
        redact.remember_request_token(f"used-upstream-token-{i:05d}")
    assert redact.registry_size() <= redact.CONFIGURED_BOUND + redact.REQUEST_TOKEN_BOUND
    newest, oldest = "used-upstream-token-09999", "used-upstream-token-00000"
    assert redact.scrub_log(f"saw {newest}") == f"saw {redact.MASK}"
    assert redact.scrub_log(f"saw {oldest}") == f"saw {oldest}"  # evicted: the bound is real
    # Log lines only: a remembered caller's token masks nothing in anybody's answer.
    assert redact.scrub_values({"text": newest}) == {"text": newest}


@pytest.mark.usefixtures("sim_cfg")
async def test_an_honoured_token_echoed_in_an_argument_is_masked_in_that_callers_result_only(http_server, sim, active_config):
    token = "caller-token-echoed-3c9f0d2b"
    cfg = _http_cfg(sim, active_config, server__allow_insecure_header_token=True)
    with http_server(cfg) as srv:
        async with httpx.AsyncClient(timeout=60) as http:
            own_search = _ok(await _call(http, srv.url, "eco_search_products", {"query": token}, token=token))
            own_product = _ok(await _call(http, srv.url, "eco_get_product", {"product": token}, token=token))
            other_product = _ok(await _call(http, srv.url, "eco_get_product", {"product": token}))
    for result in (own_search, own_product):
        assert token not in result["content"][0]["text"]
        assert token not in json.dumps(result["structuredContent"], ensure_ascii=False)
    assert redact.MASK in own_product["content"][0]["text"]
    # The error keeps its shape: only string values were masked.
    assert set(own_product["structuredContent"]["error"]) == {"code", "message", "details", "hint", "retryable"}
    # Another caller sending the same text as an argument is not that caller: nothing is masked.
    assert token in other_product["content"][0]["text"]


@pytest.mark.usefixtures("sim_cfg")
async def test_the_configured_canary_token_and_used_request_tokens_are_masked_in_log_lines(http_server, sim, active_config):
    caller = sim.issue_token()
    cfg = eco_config.load_config(flags={"eco.base_url": sim.base_url, "eco.graphql_url": sim.graphql_url,
                                        "server.transport": "http", "server.allow_insecure_header_token": True},
                                 env={"ECO_TOKEN": CANARY}, warn=False)
    active_config(cfg)
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.addFilter(redact.RedactingFilter())
    logger = logging.getLogger("eco.test.hostile")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        with http_server(cfg) as srv:
            async with httpx.AsyncClient(timeout=60) as http:
                ping = _ok(await _call(http, srv.url, "eco_ping", {"check_api": True}, token=caller))
        assert ping["_meta"]["io.eco-mcp/upstream"]["requests"] >= 1, "the caller's token was used upstream"
        logger.info("configured %s", CANARY)
        logger.info("caller %s", caller)
        try:
            raise RuntimeError(f"boom {CANARY} {caller}")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = "\n".join(lines)
    assert len(lines) == 3
    assert CANARY not in text and caller not in text
    assert text.count(redact.MASK) >= 4
