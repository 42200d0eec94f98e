"""Reading the body of a streamed response (stream=True) without httpx's per-piece copies.

    body_chunks(resp)        async pieces of the raw body, on the event loop

It stops where the body's last byte is, keeps h11's count of what is left in step and leaves
EndOfMessage to h11 and httpcore, so a connection read to its end goes back to the pool as usual
and one read short of it is closed. It reaches through httpx's and httpcore's stream objects;
where those are not what it expects (another transport, chunked bodies, another httpcore), it
streams through httpx as before. Its errors are httpx transport errors, as httpx's own reads
raise them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import h11
import httpcore
import httpx
from h11._readers import ContentLengthReader as _ContentLengthReader
from httpx._transports.default import map_httpcore_exceptions as _map_httpcore_errors

from upstream.http import READ_BYTES


async def body_chunks(resp: httpx.Response) -> AsyncIterator[bytes | bytearray]:
    """The raw body of a response sent with stream=True, piece by piece as it arrives.

    Through httpx, every body byte is copied four times on the event loop after the socket read:
    h11 appends each read to its buffer, slices the piece out twice, and httpcore copies it once
    more into bytes (~200 MB of copying for a 50 MB download, on the thread that also reads every
    socket). For a plain HTTP/1.1 body of known length on our own pool's connection, the reads
    after the first go straight from the connection's stream to the caller, h11's count of what
    is left kept in step (its checks and keep-alive stay as they were); the body bytes the first
    read brought with the headers are taken from h11's buffer as they are. Anything else (chunked bodies, other
    transports, another httpcore) streams through httpx as before."""
    conn = _http11_of(resp)
    state = getattr(conn, "_h11_state", None)
    if conn is None or state is None or not isinstance(getattr(state, "_reader", None), _ContentLengthReader):
        async for chunk in resp.aiter_raw():
            yield chunk
        return
    reader = state._reader
    held = _take_h11_buffer(state, reader)
    if held is not None:
        yield held
    # EndOfMessage is h11's and httpcore's to see (the connection goes back to the pool or closes
    # as usual): this stops where the body's last byte is, before h11 would report it.
    while isinstance(getattr(reader, "_remaining", None), int) and reader._remaining:
        try:
            event = state.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc
        if isinstance(event, h11.Data):
            yield event.data
            continue
        if event is h11.NEED_DATA and not len(state._receive_buffer):
            async for piece in _straight(conn._network_stream, reader, state, resp):
                yield piece
        break
    async for chunk in resp.aiter_raw():
        yield chunk


def _take_h11_buffer(state: h11.Connection, reader: Any) -> bytearray | None:
    """What the first read brought beyond the headers, when it is body only: h11's buffer handed
    over whole (rather than sliced out of it twice), h11's count of what is left lowered by it."""
    held = getattr(getattr(state, "_receive_buffer", None), "_data", None)
    left = getattr(reader, "_remaining", None)
    if isinstance(held, bytearray) and isinstance(left, int) and 0 < len(held) <= left \
            and state.their_state is h11.SEND_BODY:
        state._receive_buffer._data = bytearray()
        reader._remaining = left - len(held)
        return held
    return None


async def _straight(stream: Any, reader: Any, state: h11.Connection, resp: httpx.Response) -> AsyncIterator[bytes]:
    timeout = resp.request.extensions.get("timeout", {}).get("read")
    while reader._remaining:
        with _map_httpcore_errors():
            data = await stream.read(READ_BYTES, timeout)
        if not data:
            raise _cut_short(reader._remaining)
        left = reader._remaining
        if len(data) > left:  # bytes beyond this body: h11 judges them as it would have
            state.receive_data(data[left:])
            data = data[:left]
        reader._remaining = left - len(data)
        yield data


def _cut_short(missing: int) -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError(f"peer closed connection without sending complete message body "
                                     f"({missing} bytes missing)")


def _http11_of(resp: httpx.Response) -> Any:
    """The httpcore HTTP/1.1 connection a streamed response is read from, or None: through
    httpx's bound stream, its transport's stream, the pool's stream and the connection's."""
    inner: Any = getattr(getattr(resp, "stream", None), "_stream", None)
    inner = getattr(getattr(inner, "_httpcore_stream", None), "_stream", None)
    conn = getattr(inner, "_connection", None)
    return conn if isinstance(conn, httpcore.AsyncHTTP11Connection) else None
