"""upstream.bodies.body_chunks: a streamed body of known length read straight from the connection
(no copies through h11) is the same bytes, leaves the connection reusable, and a body cut short
is an httpx transport error as before; bodies of other framings stream through httpx."""

from __future__ import annotations

import asyncio
import hashlib
import os

import httpx
import pytest

from tests.upstream.bare_http import chunked, serve
from upstream.bodies import _http11_of, body_chunks

BODY = os.urandom(3 * (1 << 20) + 12345)  # several socket reads past the first


async def _serve(reply) -> tuple[asyncio.AbstractServer, str, list[int]]:
    server, served = await serve(reply)
    return server, served.url, served.opened


async def _whole(writer: asyncio.StreamWriter) -> bool:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
    for i in range(0, len(BODY), 200_000):  # in pieces, so the client reads many times
        writer.write(BODY[i:i + 200_000])
        await writer.drain()
        await asyncio.sleep(0)
    return True


async def _read(client: httpx.AsyncClient, url: str) -> tuple[bytes, int]:
    async with client.stream("GET", url) as resp:
        straight = _http11_of(resp) is not None
        parts = [bytes(p) async for p in body_chunks(resp)]
    return b"".join(parts), len(parts) if straight else -1


async def test_a_long_body_comes_whole_and_the_connection_is_reused():
    server, url, opened = await _serve(_whole)
    async with server, httpx.AsyncClient() as client:
        for _ in range(3):
            got, pieces = await _read(client, url)
            assert hashlib.md5(got).digest() == hashlib.md5(BODY).digest()
            assert pieces > 1  # read through the fast path, in more than one piece
    assert len(opened) == 1  # keep-alive held: each body ended where h11 expected it


async def test_a_body_cut_short_is_a_transport_error_and_the_connection_is_not_reused():
    sent = []

    async def short(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
        writer.write(BODY[: len(BODY) // 2])
        await writer.drain()
        sent.append(1)
        return False  # closes the connection half-way

    server, url, opened = await _serve(short)
    async with server, httpx.AsyncClient() as client:
        for _ in range(2):
            with pytest.raises(httpx.RemoteProtocolError):
                await _read(client, url)
    assert len(opened) == 2


async def test_a_chunked_body_streams_through_httpx():
    server, url, opened = await _serve(chunked(BODY))
    async with server, httpx.AsyncClient() as client:
        for _ in range(2):
            got, _pieces = await _read(client, url)
            assert got == BODY
    assert len(opened) == 1


async def test_a_body_that_came_with_its_headers_is_whole_and_the_connection_is_reused():
    small = BODY[:10_000]

    async def at_once(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(small), small))
        await writer.drain()
        return True

    server, url, opened = await _serve(at_once)
    async with server, httpx.AsyncClient() as client:
        for _ in range(3):
            got, pieces = await _read(client, url)
            assert got == small and pieces == 1
    assert len(opened) == 1
