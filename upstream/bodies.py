"""Reading the body of a streamed response (stream=True) without httpx's per-piece copies.

    body_chunks(resp)        async pieces of the raw body, on the event loop
    socket_body(resp)        SocketBody or None: the rest of a plain-TCP HTTP/1.1 body of known
                             length, read on a worker thread straight from the socket
    await body.run(job)      job(body) on a worker thread; body.readinto(buf) as a file would

Both stop where the body's last byte is, keep h11's count of what is left in step and leave
EndOfMessage to h11 and httpcore, so a connection read to its end goes back to the pool as usual
and one read short of it is closed. Both reach through httpx's, httpcore's and anyio's stream
objects; where those are not what this expects (another transport, chunked bodies, TLS, another
httpcore or anyio), body_chunks streams through httpx as before and socket_body gives None.

Errors from either are httpx transport errors (RemoteProtocolError for a body cut short,
ReadTimeout, ReadError), as httpx's own reads raise them.
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
import struct
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import h11
import httpcore
import httpx
from h11._readers import ContentLengthReader as _ContentLengthReader
from httpx._transports.default import map_httpcore_exceptions as _map_httpcore_errors

from upstream.http import READ_BYTES

T = TypeVar("T")
# How often a worker blocked on a quiet socket looks whether its call was cancelled.
_STOP_CHECK_S = 0.2
# On Linux the worker's reads block in the kernel until a whole buffer has arrived (MSG_WAITALL,
# SO_RCVTIMEO for the stop checks): one GIL round trip per MiB instead of a poll and a read per
# piece of 64-256 KiB, each of which waits its turn for the GIL. Elsewhere: poll and read.
_WAIT_ALL = sys.platform == "linux"
_TICK = struct.pack("@ll", 0, int(_STOP_CHECK_S * 1e6))
_NO_TIMEOUT = struct.pack("@ll", 0, 0)


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


def _anyio_socket_stream(network_stream: Any) -> Any:
    """anyio's asyncio SocketStream under httpcore's stream (and our _WideStream around it)."""
    inner = getattr(network_stream, "_inner", network_stream)  # _WideStream
    stream = getattr(inner, "_stream", None)  # httpcore's AnyIOStream
    ok = all(hasattr(stream, a) for a in ("_transport", "_protocol")) and \
        hasattr(getattr(stream, "_protocol", None), "read_queue")
    return stream if ok else None


class SocketBody:
    """The rest of one response body, read on a worker thread from a dup of its socket.

    Why: on the event loop each piece of a body passes through anyio's, httpcore's and httpx's
    layers and then waits for a thread to hash and write it, every hand-over a trip through the
    GIL. On a worker thread recv_into, MD5 and write each release the GIL, so a download's bytes
    move on as many cores as there are, and the loop is free for the requests beside them.

    Safe because anyio pauses its transport between reads (nothing on the loop reads this socket
    until httpcore asks for the next event, which is after run() returns) and because the thread
    reads a dup of the socket, never the loop's own descriptor."""

    def __init__(self, state: h11.Connection, sock: socket.socket, held: list[bytes | bytearray | memoryview], left: int,
                 reader: Any, timeout: float | None) -> None:
        self._state, self._sock, self._held, self.left, self._reader = state, sock, held, left, reader
        self._timeout = timeout
        self._stop = threading.Event()
        self._failed: httpx.TransportError | None = None
        self._flags = socket.MSG_WAITALL if _WAIT_ALL else 0
        if not _WAIT_ALL:
            sock.settimeout(_STOP_CHECK_S if timeout is None else min(_STOP_CHECK_S, timeout))

    def readinto(self, buf: memoryview, at_least: int = 1) -> int:
        """Bytes of the body into buf: at least `at_least` (fewer only at the body's end), at most
        len(buf), blocking until they arrive; 0 at the end. An error after some bytes arrived
        returns those first and is raised by the next call, so a caller writing what it gets
        keeps every byte that came before a connection broke."""
        if self._failed is not None:
            raise self._failed
        filled = 0
        try:
            while filled < min(at_least, len(buf)):
                n = self._read_once(buf[filled:])
                if not n:
                    break
                filled += n
        except httpx.TransportError as exc:
            if not filled:
                raise
            self._failed = exc
        return filled

    def _read_once(self, buf: memoryview) -> int:
        if self._stop.is_set():
            raise httpx.ReadError("the download was cancelled")
        if self._held:
            piece = memoryview(self._held[0])
            n = min(len(piece), len(buf))
            buf[:n] = piece[:n]
            if n == len(piece):
                self._held.pop(0)
            else:
                self._held[0] = piece[n:]
            return n
        if not self.left:
            return 0
        want = min(len(buf), self.left)
        waited_since = time.monotonic()
        while True:
            try:
                n = self._sock.recv_into(buf, want, self._flags)
                break
            except (TimeoutError, BlockingIOError):  # a tick of the stop checks
                if self._stop.is_set():
                    raise httpx.ReadError("the download was cancelled") from None
                if self._timeout is not None and time.monotonic() - waited_since >= self._timeout:
                    raise httpx.ReadTimeout("timed out reading the response body") from None
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        if not n:
            raise _cut_short(self.left)
        self.left -= n
        return n

    def _work(self, job: Callable[[SocketBody], T]) -> T:
        if not _WAIT_ALL:
            return job(self)
        # Blocking is a flag of the descriptor both share: set only while the loop leaves the
        # socket alone (its transport paused, its owner awaiting run()), and always set back.
        self._sock.setblocking(True)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _TICK)
        try:
            return job(self)
        finally:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _NO_TIMEOUT)
            self._sock.setblocking(False)

    async def run(self, job: Callable[[SocketBody], T], executor: Executor | None = None) -> T:
        """job(self) on a worker thread. A cancelled caller stops the reads and waits for the
        thread to let go of the socket before the cancellation goes on (the connection is then
        closed by httpcore: its body was not read to the end)."""
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        fut = loop.run_in_executor(executor, ctx.run, self._work, job)
        try:
            result = await asyncio.shield(fut)
        except asyncio.CancelledError:
            self._stop.set()
            while not fut.done():
                try:
                    await asyncio.wait([fut])
                except asyncio.CancelledError:
                    continue
            raise
        finally:
            self._sock.close()
            self._reader._remaining = self.left + sum(len(p) for p in self._held)
        # h11, with nothing left to read, reports the body's end (its state DONE), so httpcore
        # hands the connection back to the pool on close instead of closing it.
        try:
            event = self._state.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc
        if not isinstance(event, h11.EndOfMessage):
            raise httpx.RemoteProtocolError(f"after the body: {type(event).__name__}")
        return result


def socket_body(resp: httpx.Response) -> SocketBody | None:
    """A SocketBody for the rest of resp's body, or None where only body_chunks can read it: not
    HTTP/1.1 with a Content-Length, TLS, or the layers below not as expected."""
    conn = _http11_of(resp)
    state = getattr(conn, "_h11_state", None)
    reader = getattr(state, "_reader", None)
    if state is None or not isinstance(reader, _ContentLengthReader) or state.their_state is not h11.SEND_BODY:
        return None
    stream = _anyio_socket_stream(getattr(conn, "_network_stream", None))
    left = getattr(reader, "_remaining", None)
    if stream is None or not isinstance(left, int) or stream._transport.get_extra_info("sslcontext") is not None:
        return None
    transport, protocol = stream._transport, stream._protocol
    queued = list(protocol.read_queue)
    buffered = getattr(getattr(state, "_receive_buffer", None), "_data", None)
    raw = transport.get_extra_info("socket")
    if transport.is_reading() or raw is None or not isinstance(buffered, bytearray) \
            or len(buffered) + sum(len(q) for q in queued) > left:
        return None  # a reading transport would race the thread; more than the body: h11's to judge
    sock = raw.dup()
    held: list[bytes | bytearray | memoryview] = []
    first = _take_h11_buffer(state, reader)
    if first is not None:
        held.append(first)
    held.extend(queued)
    protocol.read_queue.clear()
    protocol.read_event.clear()
    timeout = resp.request.extensions.get("timeout", {}).get("read")
    queued_bytes = sum(len(q) for q in queued)
    return SocketBody(state, sock, held, reader._remaining - queued_bytes, reader, timeout)
