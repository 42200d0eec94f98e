"""Identifiers that become URL path segments: '.', '..', an empty string, '/' or '\\' would change
the route (a dot segment collapses it on the way out; a quoted slash may be decoded back into one
by the server), so each is invalid_argument naming the parameter, before any request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from eco_core.errors import EcoError
from upstream.client import UpstreamClient

from .conftest import make_cfg

# Every client method that puts a caller's identifier into the path, with the parameter each
# identifier is named by.
CALLS: dict[str, tuple[str, Callable[[UpstreamClient, str], Awaitable[Any]]]] = {
    "product": ("productCode", lambda c, v: c.product(v)),
    "site": ("siteCode", lambda c, v: c.site(v)),
    "release": ("releaseIdentifier", lambda c, v: c.release(v)),
    "release_product tag": ("releaseTag", lambda c, v: c.release_product(v, "DP1.00001.001")),
    "release_product code": ("productCode", lambda c, v: c.release_product("RELEASE-2025", v)),
    "release_site tag": ("releaseTag", lambda c, v: c.release_site(v, "HARV")),
    "release_site code": ("siteCode", lambda c, v: c.release_site("RELEASE-2025", v)),
    "location": ("locationName", lambda c, v: c.location(v)),
    "prototype_dataset": ("uuid", lambda c, v: c.prototype_dataset(v)),
    "prototype_data": ("uuid", lambda c, v: c.prototype_data(v)),
    "data_listing product": ("productCode", lambda c, v: c.data_listing(v, "HARV", "2020-01")),
    "data_listing site": ("siteCode", lambda c, v: c.data_listing("DP1.00001.001", v, "2020-01")),
    "data_listing month": ("yearMonth", lambda c, v: c.data_listing("DP1.00001.001", "HARV", v)),
    "data_file_url filename": ("filename", lambda c, v: c.data_file_url("DP1.00001.001", "HARV", "2020-01", v)),
    "data_file_url release": ("releaseTag", lambda c, v: c.data_file_url("DP1.00001.001", "HARV", "2020-01", "a.csv",
                                                                          release=v)),
    "document_head": ("specNumber", lambda c, v: c.document_head(v)),
    "document": ("specNumber", lambda c, v: c.document(v)),
}


# Percent-encoded too: decoded once, '%2e%2e%2f' is '../' (it went upstream as an escape); an
# escape left after decoding ('%252e') or one spelling no text ('%ff') is not decoded again.
@pytest.mark.parametrize("value", ["..", ".", "", "a/b", "../products", "a\\b", "%2e%2e%2f", "%2E%2E", "a%2Fb",
                                   "a%5cb", "%252e%252e", "a%00b", "a\x00b", "%ff"])
@pytest.mark.parametrize("call", sorted(CALLS))
async def test_an_identifier_that_is_not_one_path_segment_is_invalid_argument_before_any_request(
        client_factory, call, value):
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    if call == "data_file_url release" and value == "":
        pytest.skip("an empty release is no release: the file's latest")
    parameter, method = CALLS[call]
    client = client_factory(handle, cfg=make_cfg({"ECO_MCP_ECO__API_TOKEN": "a-token-for-token-only-calls"}))
    with pytest.raises(EcoError) as caught:
        await method(client, value)
    assert caught.value.code == "invalid_argument"
    assert caught.value.details["field"] == parameter and caught.value.message.startswith(f"{parameter}: ")
    assert sent == []


@pytest.mark.parametrize("value", ["NEON.DOC.000780vB", "a b", "50%", "x?y", "...", ".hidden"])
async def test_other_identifiers_stay_one_quoted_segment(client_factory, value):
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(404, json={"error": {"status": 404}})

    client = client_factory(handle)
    with pytest.raises(EcoError):
        await client.document_head(value)
    [request] = sent
    assert request.url.raw_path.decode().rsplit("/", 1)[0] == "/api/v0/documents"


async def test_a_percent_encoded_identifier_goes_upstream_decoded_once_and_quoted(client_factory):
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(404, json={"error": {"status": 404}})

    client = client_factory(handle)
    with pytest.raises(EcoError):
        await client.document_head("NEON%2EDOC%2E000780vB")
    [request] = sent
    assert request.url.raw_path.decode() == "/api/v0/documents/NEON.DOC.000780vB"
