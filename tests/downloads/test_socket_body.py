"""upstream.bodies.socket_body: the rest of a plain HTTP/1.1 body read on a worker thread from
the socket itself is the same bytes, leaves the connection reusable and non-blocking for the
loop, and ends like httpx's own reads when cut short, stalled or cancelled."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
import threading

import httpx
import pytest

from upstream.bodies import SocketBody, _http11_of, socket_body

BODY = os.urandom(3 * (1 << 20) + 12345)


async def _serve(reply) -> tuple[asyncio.AbstractServer, str, list[int]]:
    opened: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened.append(1)
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                if not await reply(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/f", opened


def _head(n: int) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n


async def _in_pieces(writer: asyncio.StreamWriter) -> bool:
    writer.write(_head(len(BODY)))
    for i in range(0, len(BODY), 200_000):
        writer.write(BODY[i:i + 200_000])
        await writer.drain()
        await asyncio.sleep(0)
    return True


def _slurp(body: SocketBody) -> tuple[bytes, int]:
    """A job: the whole body, read in 64 KiB steps, and the thread it ran on."""
    buf = memoryview(bytearray(1 << 16))
    parts = []
    while n := body.readinto(buf):
        parts.append(bytes(buf[:n]))
    return b"".join(parts), threading.get_ident()


def _nonblocking(resp: httpx.Response) -> bool:
    sock = _http11_of(resp)._network_stream.get_extra_info("socket")
    return bool(fcntl.fcntl(sock.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK)


async def test_a_long_body_is_read_off_the_loop_whole_and_the_connection_is_reused():
    server, url, opened = await _serve(_in_pieces)
    async with server, httpx.AsyncClient() as client:
        for _ in range(3):
            async with client.stream("GET", url) as resp:
                body = socket_body(resp)
                assert body is not None
                got, thread = await body.run(_slurp)
                assert _nonblocking(resp)  # the loop's own reads of this socket stay non-blocking
            assert hashlib.md5(got).digest() == hashlib.md5(BODY).digest()
            assert thread != threading.get_ident()
    assert len(opened) == 1


async def test_a_body_that_came_with_its_headers_is_whole_and_the_connection_is_reused():
    small = BODY[:10_000]

    async def at_once(writer: asyncio.StreamWriter) -> bool:
        writer.write(_head(len(small)) + small)
        await writer.drain()
        return True

    server, url, opened = await _serve(at_once)
    async with server, httpx.AsyncClient() as client:
        for _ in range(3):
            async with client.stream("GET", url) as resp:
                body = socket_body(resp)
                assert body is not None
                got, _ = await body.run(_slurp)
            assert got == small
    assert len(opened) == 1


async def test_a_body_cut_short_is_a_protocol_error_and_the_connection_is_not_reused():
    async def short(writer: asyncio.StreamWriter) -> bool:
        writer.write(_head(len(BODY)) + BODY[: len(BODY) // 2])
        await writer.drain()
        return False

    server, url, opened = await _serve(short)
    async with server, httpx.AsyncClient() as client:
        for _ in range(2):
            with pytest.raises(httpx.RemoteProtocolError):
                async with client.stream("GET", url) as resp:
                    body = socket_body(resp)
                    assert body is not None
                    await body.run(_slurp)
    assert len(opened) == 2


async def test_a_stalled_body_is_a_read_timeout():
    stall = asyncio.Event()

    async def stalls(writer: asyncio.StreamWriter) -> bool:
        writer.write(_head(len(BODY)) + BODY[:100_000])
        await writer.drain()
        await stall.wait()
        return False

    server, url, _ = await _serve(stalls)
    async with server, httpx.AsyncClient(timeout=httpx.Timeout(5, read=0.5)) as client:
        with pytest.raises(httpx.ReadTimeout):
            async with client.stream("GET", url) as resp:
                body = socket_body(resp)
                assert body is not None
                await body.run(_slurp)
        stall.set()


async def test_a_cancelled_read_lets_go_of_the_socket_before_the_cancellation_goes_on():
    stall = asyncio.Event()
    ended = threading.Event()

    async def stalls(writer: asyncio.StreamWriter) -> bool:
        writer.write(_head(len(BODY)) + BODY[:100_000])
        await writer.drain()
        await stall.wait()
        return False

    def job(body: SocketBody) -> None:
        try:
            _slurp(body)
        finally:
            ended.set()

    server, url, _ = await _serve(stalls)
    # No read timeout: only the cancellation can end the thread's wait.
    async with server, httpx.AsyncClient(timeout=httpx.Timeout(5, read=None)) as client:
        async def read() -> None:
            async with client.stream("GET", url) as resp:
                body = socket_body(resp)
                assert body is not None
                await body.run(job)

        task = asyncio.create_task(read())
        await asyncio.sleep(0.3)
        assert not ended.is_set()  # blocked on the stalled socket, on its thread
        task.cancel()
        try:
            await asyncio.wait({task}, timeout=5)
            assert task.done() and task.cancelled()
            assert ended.is_set()  # the thread was done with the socket when the task ended
        finally:
            stall.set()  # a thread still reading gets the connection's end


async def test_a_chunked_body_is_left_to_httpx():
    async def chunked(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        await writer.drain()
        return True

    server, url, _ = await _serve(chunked)
    async with server, httpx.AsyncClient() as client, client.stream("GET", url) as resp:
        assert socket_body(resp) is None
        assert await resp.aread() == b"hello"
