"""Replies of PARSE_IN_THREAD_BYTES or more are decoded and validated on a worker thread so the
event loop keeps serving other calls; the caller must not be able to tell: same typed model,
same errors, same caching."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from eco_core.errors import EcoError
from upstream import client as client_mod
from upstream import models as m
from upstream.client import PARSE_IN_THREAD_BYTES, UpstreamClient

from .conftest import reply, sample

CODE = "DP1.00001.001"


def _large_record() -> bytes:
    """The recorded DP1.00001.001 detail record, its keyword list grown past the threshold
    (real records reach ~840 KB through their site and month lists)."""
    doc = json.loads(sample(f"products_{CODE}.json"))
    doc["data"]["keywords"] = [f"keyword number {i:06d}" for i in range(PARSE_IN_THREAD_BYTES // 20)]
    body = json.dumps(doc).encode()
    assert len(body) >= PARSE_IN_THREAD_BYTES
    return body


@pytest.fixture
def parse_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Thread ids of every strict parse the client runs."""
    seen: list[int] = []
    real = UpstreamClient._parse

    def spy(endpoint: str, model: Any, content: bytes) -> Any:
        seen.append(threading.get_ident())
        return real(endpoint, model, content)

    monkeypatch.setattr(UpstreamClient, "_parse", staticmethod(spy))
    return seen


async def test_a_large_product_record_parsed_on_a_worker_thread_is_the_same_typed_model(
        client_factory, parse_threads):
    body = _large_record()
    requests = 0

    async def handle(request: httpx.Request) -> httpx.Response:
        nonlocal requests
        requests += 1
        return reply(200, body)

    client = client_factory(handle)
    fetched = await client.product(CODE)
    cached = await client.product(CODE)
    expected = m.DataEnvelope[m.Product].model_validate_json(body).data
    assert fetched == expected and cached == expected
    assert len(fetched.keywords) == PARSE_IN_THREAD_BYTES // 20
    assert requests == 1, "the second read is a cache hit"
    assert parse_threads and threading.get_ident() not in parse_threads, "both parses ran off the loop's thread"


async def test_a_small_reply_is_still_parsed_on_the_loop(client_factory, parse_threads):
    client = client_factory(lambda request: reply(200, sample(f"products_{CODE}.json")))
    assert (await client.product(CODE)).product_code == CODE
    assert parse_threads == [threading.get_ident()]


async def test_a_large_reply_that_is_not_json_gives_upstream_error_unexpected_body(client_factory, parse_threads):
    body = b'{"data": ' + b"[" * PARSE_IN_THREAD_BYTES
    client = client_factory(lambda request: reply(200, body))
    with pytest.raises(EcoError) as err:
        await client.product(CODE)
    assert err.value.code == "upstream_error" and err.value.details["reason"] == "unexpected_body"
    assert parse_threads and threading.get_ident() not in parse_threads
    with pytest.raises(EcoError) as inline:
        UpstreamClient._parse("/products/{productCode}", m.DataEnvelope[m.Product], body)
    assert err.value.to_dict() == inline.value.to_dict()


async def test_a_large_reply_missing_a_relied_on_field_names_the_field(client_factory):
    doc = json.loads(_large_record())
    del doc["data"]["productName"]
    client = client_factory(lambda request: reply(200, json.dumps(doc).encode()))
    with pytest.raises(EcoError) as err:
        await client.product(CODE)
    assert err.value.code == "upstream_error" and "productName" in err.value.message


async def test_large_parses_wait_for_one_of_the_few_parse_slots(client_factory, monkeypatch):
    """At most PARSE_THREADS large replies are parsed at once, so a burst of them cannot take
    every thread of the default pool (catalog refreshes and Django use it too)."""
    monkeypatch.setattr(client_mod, "PARSE_THREADS", 1)
    body = _large_record()
    client = client_factory(lambda request: reply(200, body))
    inside, most = 0, 0
    real = UpstreamClient._parse
    lock = threading.Lock()

    def counting(endpoint: str, model: Any, content: bytes) -> Any:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        try:
            return real(endpoint, model, content)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(UpstreamClient, "_parse", staticmethod(counting))
    import asyncio

    records = await asyncio.gather(*(client.product(CODE, release=f"RELEASE-20{n:02d}") for n in range(6)))
    assert {r.product_code for r in records} == {CODE}
    assert most == 1
