"""The wire under streamed downloads: file bodies over aiohttp, answered as httpx responses.

    wire = FileWire(limits, ssl_context)       one per upstream client (so one per event loop)
    url = wire.url(text)                       the URL as this wire will connect to it
    resp = await wire.send(method, url, headers, timeout)   an httpx.Response, body unread
    await wire.aclose()

Why: a download is ~100 small files, and each request through httpx, httpcore, h11 and anyio
costs the event loop far more than its body reads (httpx validates a long signed URL character by
character in Python); bench/bench_downloads.py has the figures. aiohttp parses URLs (yarl) and
responses (llhttp) in C and hands the body up as it arrives. Only the bytes move here: UpstreamHttp, the chokepoint, still decides
each request's headers and token, vets every hop against the allow-list, follows redirects by
hand, retries and maps statuses, exactly as for its httpx requests, from the same
httpx.Response surface (status_code, headers, aread, aiter_raw, aclose). The response carries
no httpx.Request: that would parse the URL with httpx again.

Errors are httpx's transport errors, so mapping.from_transport and every caller see what they
see from httpx:

    connect timeout                   -> httpx.ConnectTimeout
    no byte within the read timeout   -> httpx.ReadTimeout
    cannot connect (refused, DNS)     -> httpx.ConnectError
    body ends early, connection
    dropped, bad framing              -> httpx.RemoteProtocolError
    other socket errors               -> httpx.ReadError
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL


def _failures() -> tuple[type[BaseException], ...]:
    # aiohttp and yarl are imported on the first download, not at start-up: ~0.1-0.3 s that
    # neither the HTTP server (which offers no downloads) nor a stdio start should pay.
    import aiohttp

    return aiohttp.ClientError, asyncio.TimeoutError, OSError


def transport_error(exc: BaseException, method: str, url: URL) -> httpx.TransportError:
    """The httpx transport error that stands for an aiohttp one (see the module's table), with
    the request it was for (built only now: its httpx parse is what this wire saves)."""
    import aiohttp

    message = str(exc) or type(exc).__name__
    kind: type[httpx.TransportError] = httpx.ReadError
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        kind = httpx.ReadTimeout
    elif isinstance(exc, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
    elif isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientResponseError)):
        kind = httpx.RemoteProtocolError
    try:
        request: httpx.Request | None = httpx.Request(method, str(url))
    except httpx.InvalidURL:  # yarl took what httpx would not: the error names no host then
        request = None
    return kind(message, request=request)


class FileBody(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx's stream: pieces as they arrive, undecoded (the
    bytes the server stored, which the MD5 covers). The connection goes back to aiohttp's pool
    when the body was read to its end, and is closed when it was not."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self._method = response.method

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while chunk := await content.readany():
                yield chunk
        except _failures() as exc:
            raise transport_error(exc, self._method, self._response.url) from exc

    async def aclose(self) -> None:
        response = self._response
        if response.content.at_eof():
            response.release()
        else:
            response.close()


class FileWire:
    def __init__(self, limits: httpx.Limits, ssl_context: ssl.SSLContext) -> None:
        self._limits = limits
        self._ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None

    @staticmethod
    def url(text: str) -> URL:
        """`text` as this wire parses it, to vet its host: the same parse it connects by. A
        signed URL is sent exactly as NEON wrote it (re-quoting would change what was signed);
        one with characters a request line cannot carry is quoted, as httpx would, and one with
        control characters is refused, as httpx refuses it."""
        from yarl import URL

        if not text.isprintable():
            raise httpx.InvalidURL("Invalid non-printable character in URL")
        return URL(text, encoded=text.isascii() and " " not in text)

    def _files(self) -> aiohttp.ClientSession:
        # Made on first use: an aiohttp session belongs to the event loop it was made on.
        import aiohttp

        if self._session is None:
            limits = self._limits
            connector = aiohttp.TCPConnector(limit=limits.max_connections or 0, ssl=self._ssl,
                                             keepalive_timeout=limits.keepalive_expiry or 0)
            # No cookies kept (see http._CookielessClient), bodies never decompressed (the MD5
            # is of the stored bytes), and no header of aiohttp's own where the caller set one.
            self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                                  auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None))
            # aiohttp sends a GET again, once and unseen, when its connection drops: the
            # chokepoint retries with its own back-off and counts every attempt against the
            # upstream's budget, so a drop must reach it as one attempt. No public switch: this
            # is the attribute aiohttp's own test client sets (tests/upstream/test_file_wire.py
            # counts the requests a drop costs, and fails if it stops working).
            self._session._retry_connection = False  # type: ignore[attr-defined]
        return self._session

    async def send(self, method: str, url: URL, headers: dict[str, str], timeout: httpx.Timeout) -> httpx.Response:
        import aiohttp

        limits = aiohttp.ClientTimeout(total=None, sock_connect=timeout.connect, sock_read=timeout.read,
                                       connect=timeout.pool)
        try:
            response = await self._files().request(method, url, headers=headers, allow_redirects=False,
                                                   timeout=limits, auto_decompress=False)
        except _failures() as exc:
            raise transport_error(exc, method, url) from exc
        return httpx.Response(response.status, headers=response.raw_headers, stream=FileBody(response))

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
