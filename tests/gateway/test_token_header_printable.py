"""A caller's token header that is not printable ASCII (httpx cannot send it upstream, and no real
token looks like that) is refused over real HTTP as invalid_argument naming the header, before
any upstream request; its value is never echoed."""

from __future__ import annotations

import httpx
import pytest

from tests.gateway.wire import modern_request, reply
from tests.tools.conftest import catalog_module, sim_cfg, sim_config  # noqa: F401  (fixtures)

BAD = [
    "tøkén-ünïcødé-✓-値".encode(),        # UTF-8 bytes, as a client sends them
    b"token-with-latin1-\xe9-byte",
    b"token-with\ta-tab",
]


@pytest.mark.usefixtures("sim_cfg")
@pytest.mark.parametrize("value", BAD, ids=["utf8", "latin1", "tab"])
async def test_a_token_header_that_is_not_printable_ascii_is_invalid_argument_naming_the_header(
        http_server, sim, active_config, value):
    cfg = active_config(sim_config(sim, server__transport="http", server__allow_insecure_header_token=True))
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {"check_api": True}}, rid=7)
    sim.requests.clear()
    with http_server(cfg) as srv:
        async with httpx.AsyncClient(timeout=60) as http:
            resp = await http.post(srv.url, json=body, headers={**headers, "X-API-Token": value})
            # The same call with a printable token reaches the upstream (the header was the only fault).
            good = reply(await http.post(srv.url, json=body, headers={**headers, "X-API-Token": "printable-tok3n"}))
    assert resp.status_code == 400, resp.text
    message = resp.json()
    assert message["id"] == 7
    error = message["error"]
    assert error["data"]["code"] == "invalid_argument" and error["data"]["field"] == "X-API-Token"
    assert "X-API-Token" in error["message"]
    raw = resp.content
    assert value not in raw and value.decode("latin-1") not in resp.text
    assert "internal_error" not in resp.text
    assert "result" in good and sim.requests.count("^/api/v0/taxonomy") == 1


@pytest.mark.usefixtures("sim_cfg")
async def test_a_non_ascii_token_header_that_is_not_honoured_is_ignored_as_any_other(http_server, sim, active_config):
    cfg = active_config(sim_config(sim, server__transport="http"))  # plain http: headers are not honoured
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    with http_server(cfg) as srv:
        resp = httpx.post(srv.url, json=body, headers={**headers, "X-API-Token": BAD[0]}, timeout=60)
    result = reply(resp)["result"]
    assert not result.get("isError") and result["structuredContent"]["tokenSource"] == "none"
