"""The Host and Origin checks compare the port wherever one is configured (issue 41): the public
URL's host answers on its port only (written, or its scheme's default), an allowed host with a
port on that port only, and an allowed origin is scheme, host and port; loopback names and
entries without a port (or with `:*`) still match any port."""

# ruff: noqa: F811  (pytest fixtures imported from other conftest modules are parameters here)
from __future__ import annotations

import httpx

from tests.gateway.conftest import fake_catalog, http_server, make_cfg  # noqa: F401  (fixtures)
from tests.gateway.wire import modern_request


def _status(url: str, headers: dict[str, str]) -> int:
    body, mcp_headers = modern_request("tools/list")
    return httpx.post(url, json=body, headers={**mcp_headers, **headers}).status_code


def test_the_public_host_and_origin_answer_on_their_port_only(http_server):
    cfg = make_cfg(server__public_base_url="https://eco.example.org",
                   server__allowed_hosts=["api.example.org:8443", "any.example.org"],
                   server__allowed_origins=["https://app.example.org", "https://dev.example.org:*"])
    with http_server(cfg) as srv:
        def status(host: str | None = None, origin: str | None = None) -> int:
            headers = {"Host": host} if host else {}
            return _status(srv.url, {**headers, **({"Origin": origin} if origin else {})})

        assert status("eco.example.org") == 200  # no port: the scheme's default
        assert status("eco.example.org:443") == 200
        assert status("eco.example.org:8443") == 421
        assert status("api.example.org:8443") == 200
        assert status("api.example.org:9443") == 421
        assert status("api.example.org") == 421
        assert status("any.example.org:1234") == 200  # no port configured: any
        assert status(f"127.0.0.1:{srv.port}") == 200
        assert status("localhost:1") == 200  # loopback names: any port
        assert status("eco.example.org", "https://eco.example.org") == 200
        assert status("eco.example.org", "https://eco.example.org:443") == 200
        assert status("eco.example.org", "https://eco.example.org:8443") == 403
        assert status("eco.example.org", "https://app.example.org") == 200
        assert status("eco.example.org", "https://app.example.org:9000") == 403
        assert status("eco.example.org", "http://app.example.org") == 403
        assert status("eco.example.org", "https://dev.example.org:9000") == 200
        assert status(None, f"http://127.0.0.1:{srv.port}") == 200
        assert status(None, "http://localhost:5173") == 200


def test_a_public_url_with_a_port_is_matched_on_that_port():
    from mcp_gateway.origin import HostPolicy

    policy = HostPolicy.from_config(make_cfg(server__public_base_url="http://eco.example.org:8080/mcp"))
    assert policy.check("eco.example.org:8080", "http://eco.example.org:8080") is None
    assert policy.check("eco.example.org", None) == (421, "Host 'eco.example.org' is not allowed")
    assert policy.check("eco.example.org:80", None)[0] == 421
    assert policy.check("eco.example.org:8080", "http://eco.example.org")[0] == 403
