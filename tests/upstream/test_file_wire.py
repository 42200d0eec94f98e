"""upstream.file_transport.FileWire: streamed downloads' bodies over aiohttp, read through the
httpx.Response surface the chokepoint and the transfers use. The stored bytes come whole and
undecoded, a connection is kept after a whole body and dropped after a short one, signed URLs
go out exactly as written, nothing is kept between answers, and every failure is the httpx
transport error httpx itself would raise (so it maps to the same error code)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import hashlib
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from eco_core.config import load_config
from eco_core.errors import EcoError
from upstream import mapping
from upstream.bodies import body_chunks
from upstream.client import UpstreamClient
from upstream.file_transport import FileBody, FileWire

from .bare_http import chunked, serve

BODY = os.urandom(3 * (1 << 20) + 12345)  # many socket reads
TIMEOUT = httpx.Timeout(5.0)


@contextlib.asynccontextmanager
async def _wire(ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[FileWire]:
    """A wire (plain HTTP unless given a TLS context), closed when the block ends."""
    wire = FileWire(httpx.Limits(max_connections=4, max_keepalive_connections=4), ssl_context)  # type: ignore[arg-type]
    try:
        yield wire
    finally:
        await wire.aclose()


async def _get(wire: FileWire, url: str, timeout: httpx.Timeout = TIMEOUT, into: list[bytes] | None = None) -> httpx.Response:
    resp = await wire.send("GET", wire.url(url), {"Accept": "*/*"}, timeout)
    got = into if into is not None else []
    try:
        async for piece in resp.aiter_raw():
            got.append(piece)
    finally:
        await resp.aclose()
    resp._content = b"".join(got)
    return resp


def _answer(body: bytes, extra: bytes = b""):
    async def reply(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra))
        for i in range(0, len(body), 200_000):
            writer.write(body[i:i + 200_000])
            await writer.drain()
        return True
    return reply


async def test_a_long_body_comes_whole_and_the_connection_is_kept_for_the_next_file():
    server, served = await serve(_answer(BODY))
    async with server, _wire() as wire:
        for _ in range(3):
            resp = await _get(wire, served.url)
            assert resp.status_code == 200 and hashlib.md5(resp.content).digest() == hashlib.md5(BODY).digest()
    assert len(served.opened) == 1


async def test_a_compressed_body_comes_as_the_stored_bytes_the_md5_is_of():
    stored = gzip.compress(BODY[:100_000])
    server, served = await serve(_answer(stored, b"Content-Encoding: gzip\r\n"))
    async with server, _wire() as wire:
        resp = await _get(wire, served.url)
    assert resp.content == stored and resp.headers["content-encoding"] == "gzip"


async def test_a_chunked_body_comes_whole():
    server, served = await serve(chunked(BODY))
    async with server, _wire() as wire:
        for _ in range(2):
            assert (await _get(wire, served.url)).content == BODY
    assert len(served.opened) == 1


async def test_a_body_cut_short_keeps_what_arrived_raises_httpx_s_error_and_drops_the_connection():
    async def short(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
        writer.write(BODY[: len(BODY) // 2])
        await writer.drain()
        return False

    server, served = await serve(short)
    async with server, _wire() as wire:
        for _ in range(2):
            arrived: list[bytes] = []
            with pytest.raises(httpx.RemoteProtocolError) as caught:
                await _get(wire, served.url, into=arrived)
            # What arrived is the prefix a resumed transfer continues from.
            assert b"".join(arrived) == BODY[: len(BODY) // 2]
            assert mapping.from_transport(caught.value, endpoint="storage:x").code == "upstream_unavailable"
    assert len(served.opened) == 2


async def test_a_body_left_half_read_closes_its_connection_and_the_next_file_comes_whole():
    server, served = await serve(_answer(BODY))
    async with server, _wire() as wire:
        resp = await wire.send("GET", wire.url(served.url), {}, TIMEOUT)
        async for _piece in resp.aiter_raw():
            break  # a transfer given up on (the call was cancelled, a cap was hit)
        await resp.aclose()
        assert (await _get(wire, served.url)).content == BODY
    assert len(served.opened) == 2


async def test_a_connection_dropped_before_the_answer_is_one_request_left_to_the_chokepoint_to_retry():
    async def drops(writer: asyncio.StreamWriter) -> bool:
        return False  # the request was read; the connection closes with no answer

    server, served = await serve(drops)
    async with server, _wire() as wire:
        with pytest.raises(httpx.TransportError) as caught:
            await _get(wire, served.url)
    assert len(served.heads) == 1  # aiohttp's own unseen second try would cost the upstream two
    assert mapping.from_transport(caught.value, endpoint="storage:x").code == "upstream_unavailable"


async def test_a_server_that_stops_sending_is_a_read_timeout_within_the_read_timeout():
    async def stalls(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(10)
        return False

    server, served = await serve(stalls)
    async with server, _wire() as wire:
        with pytest.raises(httpx.ReadTimeout) as caught:
            await asyncio.wait_for(_get(wire, served.url, httpx.Timeout(0.3)), 5)
    err = mapping.from_transport(caught.value, endpoint="storage:x")
    assert err.code == "upstream_unavailable" and "timed out" in err.message


async def test_a_refused_connection_is_a_connect_error_naming_the_host():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    async with _wire() as wire:
        with pytest.raises(httpx.ConnectError) as caught:
            await _get(wire, f"http://127.0.0.1:{port}/f")
    assert f"127.0.0.1:{port}" in mapping.from_transport(caught.value, endpoint="storage:x").hint


async def test_a_signed_url_goes_out_exactly_as_written():
    server, served = await serve(_answer(b"ok"), path="/b/o%2Fx?X-Goog-Credential=a%2F20261127%2Fauto&X-Goog-Signature=ab%3D~")
    async with server, _wire() as wire:
        await _get(wire, served.url)
    assert served.heads[0].split(b"\r\n")[0] == \
        b"GET /b/o%2Fx?X-Goog-Credential=a%2F20261127%2Fauto&X-Goog-Signature=ab%3D~ HTTP/1.1"


def test_a_url_with_control_characters_is_refused_before_any_connection():
    with pytest.raises(httpx.InvalidURL):
        FileWire.url("http://127.0.0.1/f\r\nX-Injected: 1")


async def test_no_cookie_one_answer_sets_rides_on_the_next_request():
    server, served = await serve(_answer(b"ok", b"Set-Cookie: session=abc; Path=/\r\n"))
    url = served.url.replace("127.0.0.1", "localhost")  # a cookie jar keeps none for a bare IP
    async with server, _wire() as wire:
        await _get(wire, url)
        await _get(wire, url)
    assert len(served.heads) == 2 and b"cookie:" not in served.heads[1].lower()


async def test_the_chokepoint_streams_downloads_over_the_wire_with_its_own_headers_and_no_token():
    server, served = await serve(_answer(BODY))
    cfg = load_config(env={"ECO_MCP_ECO__API_TOKEN": "a" * 40}, warn=False)
    client = UpstreamClient(cfg)
    async with server:
        try:
            async with client.stream(served.url, host_allowed=lambda host: True) as resp:
                assert isinstance(resp.stream, FileBody)
                assert await resp.aread() == BODY
        finally:
            await client.aclose()
    head = served.heads[0].lower()
    assert b"user-agent: eco-mcp/" in head and b"x-api-token" not in head
    assert [line for line in head.split(b"\r\n") if line.startswith(b"accept:")] == [b"accept: */*"]


async def test_the_chokepoint_continues_a_download_with_the_range_given_and_a_body_cut_short_is_retryable():
    # What a transfer does with a .part left behind: UpstreamClient.stream with a Range header.
    async def rest_cut_short(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 206 Partial Content\r\nContent-Length: %d\r\n\r\n" % (len(BODY) - 100))
        writer.write(BODY[100:len(BODY) // 2])
        await writer.drain()
        return False

    server, served = await serve(rest_cut_short)
    client = UpstreamClient(load_config(env={}, warn=False))
    arrived: list[bytes] = []
    async with server:
        try:
            with pytest.raises(EcoError) as caught:
                async with client.stream(served.url, headers={"Range": "bytes=100-"},
                                         host_allowed=lambda host: True) as resp:
                    assert resp.status_code == 206
                    async for piece in body_chunks(resp):
                        arrived.append(bytes(piece))
        finally:
            await client.aclose()
    assert b"range: bytes=100-" in served.heads[0].lower()
    assert b"".join(arrived) == BODY[100:len(BODY) // 2]  # the prefix the next call continues from
    err = caught.value
    assert (err.code, err.retryable, err.details["endpoint"]) == ("upstream_unavailable", True, "storage:127.0.0.1")


async def test_an_injected_transport_keeps_downloads_on_httpx():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b"from the mock")

    client = UpstreamClient(load_config(env={}, warn=False), transport=httpx.MockTransport(handler))
    try:
        async with client.stream("http://storage.example/f", host_allowed=lambda host: True) as resp:
            assert not isinstance(resp.stream, FileBody) and await resp.aread() == b"from the mock"
    finally:
        await client.aclose()
    assert len(seen) == 1


def test_the_server_starts_and_builds_its_client_without_importing_aiohttp():
    # aiohttp costs ~0.1-0.3 s to import: only the first download pays it, never a start.
    code = ("import asyncio, sys, django; django.setup()\n"
            "from mcp_gateway.registry import default_registry; default_registry()\n"
            "from upstream.client import get_client, close_clients\n"
            "async def main():\n"
            "    get_client(); await close_clients()\n"
            "asyncio.run(main())\n"
            "print(sorted(m for m in ('aiohttp', 'yarl') if m in sys.modules))\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "eco_service.settings"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A server context for a self-signed certificate of `localhost`, and the certificate."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return server, cert


async def test_over_tls_the_body_comes_whole_from_a_host_the_context_trusts(tls_pair):
    server_ctx, cert = tls_pair
    server, served = await serve(_answer(BODY), tls=server_ctx)
    async with server, _wire(ssl.create_default_context(cafile=str(cert))) as wire:
        assert (await _get(wire, served.url)).content == BODY


async def test_over_tls_a_certificate_the_context_does_not_trust_is_a_connect_error(tls_pair):
    server_ctx, _cert = tls_pair
    server, served = await serve(_answer(BODY), tls=server_ctx)
    async with server, _wire(ssl.create_default_context()) as wire:  # the system's CAs only
        with pytest.raises(httpx.ConnectError) as caught:
            await _get(wire, served.url)
    assert mapping.from_transport(caught.value, endpoint="storage:x").code == "upstream_unavailable"
