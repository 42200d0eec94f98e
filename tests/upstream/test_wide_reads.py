"""Responses are read up to READ_BYTES at a time (httpcore asks for 64 KiB), except where httpx
must build its own transports to honour the proxy variables."""

from __future__ import annotations

import httpcore
import httpx
import pytest

from upstream import http as up_http


class _Recorder(httpcore.AsyncNetworkStream):
    def __init__(self) -> None:
        self.asked: list[int] = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.asked.append(max_bytes)
        return b""

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.AsyncNetworkStream:  # type: ignore[no-untyped-def]
        return self


async def test_a_read_for_64_kib_asks_the_socket_for_read_bytes_also_after_tls_starts():
    inner = _Recorder()
    stream = up_http._WideStream(inner)
    await stream.read(64 * 1024)
    tls = await stream.start_tls(up_http._ssl_context(), "example.org")
    await tls.read(64 * 1024)
    assert inner.asked == [up_http.READ_BYTES, up_http.READ_BYTES]


async def test_a_read_for_more_than_read_bytes_is_passed_on_unchanged():
    inner = _Recorder()
    await up_http._WideStream(inner).read(up_http.READ_BYTES * 2)
    assert inner.asked == [up_http.READ_BYTES * 2]


def test_without_proxy_variables_the_client_reads_wide(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(up_http._wide_read_transport(httpx.Limits()), up_http._WideReadTransport)


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "http_proxy"])
def test_with_a_proxy_variable_httpx_builds_its_own_transports(monkeypatch, name):
    monkeypatch.setenv(name, "http://proxy.invalid:3128")
    assert up_http._wide_read_transport(httpx.Limits()) is None


async def test_a_connection_s_socket_transport_takes_read_bytes_from_the_kernel_per_recv():
    import asyncio

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        stream = await up_http._WideReads().connect_tcp("127.0.0.1", port)
        transport = stream._inner._stream._transport  # type: ignore[attr-defined]
        assert transport.max_size == up_http.READ_BYTES
        await stream.aclose()
        plain = await httpcore.AnyIOBackend().connect_tcp("127.0.0.1", port)
        assert plain._stream._transport.max_size < up_http.READ_BYTES  # type: ignore[attr-defined]
        await plain.aclose()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_kept_alive_connection_the_server_closed_is_not_used_again(client_factory):
    # The pool asks each idle connection whether the peer closed it (_WideStream answers that
    # from its remembered socket): a request on such a connection would fail.
    import asyncio

    from upstream.http import Call

    from .conftest import make_cfg

    opened: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened.append(1)
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()  # without `Connection: close`: the client keeps the connection

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    cfg = make_cfg({"ECO_MCP_ECO__BASE_URL": f"{base}/api/v0", "ECO_MCP_ECO__RETRIES__MAX_ATTEMPTS": "1"})
    async with server:
        http = client_factory(None, cfg=cfg).http
        for _ in range(3):
            resp = await http.request(Call("GET", f"{base}/api/v0/x", "/x"))
            assert resp.status_code == 200
            await asyncio.sleep(0.05)  # the server's close arrives while the connection is idle
    assert len(opened) == 3
