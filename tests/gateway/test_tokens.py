"""Which upstream token a call runs with (spec, Authentication 3-4), end to end over HTTP."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_gateway.tokens import choose_token
from tests.gateway.conftest import make_cfg

TOKEN = "caller-token-abcdefgh"
CONFIG_TOKEN = "operator-token-12345678"


def _cfg(**flags):
    return make_cfg(env={"ECO_TOKEN": CONFIG_TOKEN}, **flags)


def test_stdio_uses_the_configured_token():
    cfg = make_cfg(env={"ECO_TOKEN": CONFIG_TOKEN}, server__transport="stdio")
    choice = choose_token(cfg, None)
    assert (choice.token, choice.source) == (CONFIG_TOKEN, "config")


def test_stdio_without_a_configured_token_has_none():
    choice = choose_token(make_cfg(server__transport="stdio"), None)
    assert (choice.token, choice.source) == (None, "none")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, (None, "none", True)),
        ({"server__public_base_url": "http://eco.example"}, (None, "none", True)),
        ({"server__public_base_url": "https://eco.example"}, (TOKEN, "request", False)),
        ({"server__allow_insecure_header_token": True}, (TOKEN, "request", False)),
        ({"server__public_base_url": "https://eco.example", "server__accept_header_token": False}, (None, "none", True)),
        ({"server__share_config_token_over_http": True}, (CONFIG_TOKEN, "config", True)),
    ],
)
def test_a_callers_header_token_is_honoured_only_under_the_spec_conditions(flags, expected):
    choice = choose_token(_cfg(**flags), {"x-api-token": TOKEN})
    assert (choice.token, choice.source, choice.header_ignored) == expected


def test_the_operators_token_is_not_lent_to_anonymous_http_callers_by_default():
    assert choose_token(_cfg(), {}).source == "none"
    assert choose_token(_cfg(server__share_config_token_over_http=True), {}).source == "config"


def test_the_header_name_follows_the_setting():
    cfg = _cfg(server__allow_insecure_header_token=True, server__request_token_header="X-Neon-Token")
    assert choose_token(cfg, {"x-neon-token": TOKEN}).source == "request"
    assert choose_token(cfg, {"x-api-token": TOKEN}).source == "none"


def test_the_choice_never_shows_the_token_in_its_repr():
    assert TOKEN not in repr(choose_token(_cfg(server__allow_insecure_header_token=True), {"x-api-token": TOKEN}))


async def _ping(url: str, headers: dict[str, str] | None = None) -> dict:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers or {}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:
            result = await client.call_tool("eco_ping", {})
    return result


async def test_eco_ping_over_http_reports_a_request_token_without_revealing_it(http_server):
    with http_server(_cfg(server__public_base_url="https://eco.example", server__allowed_hosts=["127.0.0.1"])) as srv:
        result = await _ping(srv.url, {"X-API-Token": TOKEN})
    body = result.structured_content
    assert (body["tokenConfigured"], body["tokenSource"]) == (True, "request")
    assert TOKEN not in result.content[0].text and CONFIG_TOKEN not in result.content[0].text
    assert result.meta["io.eco-mcp/upstream"]["identity"].startswith("tok-")


async def test_eco_ping_over_plain_http_ignores_the_header_and_says_so(http_server):
    with http_server(_cfg()) as srv:
        result = await _ping(srv.url, {"X-API-Token": TOKEN})
    body = result.structured_content
    assert (body["tokenConfigured"], body["tokenSource"]) == (False, "none")
    assert any("X-API-Token header was ignored" in n for n in body["notes"])
