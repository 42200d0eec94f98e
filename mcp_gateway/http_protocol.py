"""uvicorn's HTTP protocol with a deadline on request headers (`server.header_read_timeout_s`).

uvicorn bounds the idle time between requests (its keep-alive timeout) but nothing else: a client
that opens a connection and sends nothing, or sends its headers a byte at a time, holds the
connection for as long as it likes. Here a request's headers must be complete within the deadline
of the connection opening or of the previous response ending; past it a client that had begun a
request gets 408 and the connection is closed, an idle one is closed without a reply. Bodies have
their own deadline, kept by the ASGI app (mcp_gateway.http_app).

`serve_http` runs uvicorn with this protocol; under the uvicorn command name it with
`--http mcp_gateway.http_protocol:TimedHttpProtocol` (the image and compose do).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

log = logging.getLogger("eco.gateway.http")

MESSAGE = b"Request headers not received in time"


def _header_timeout_s() -> float:
    from eco_core.config import get_config

    return get_config().server.header_read_timeout_s


class TimedHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout_s = _header_timeout_s()
        self._header_timer: asyncio.TimerHandle | None = None
        self._request_begun = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        if self._header_timer is None:  # a pipelined request, begun while another is answered
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        self._request_begun = False
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        idle = self.cycle is None or self.cycle.response_complete
        if not self.transport.is_closing() and not self.pipeline and idle:
            self._arm()  # the next request's headers (uvicorn's keep-alive closes an idle connection first)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self._header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # A response is under way: the connection ends with it, the late request unanswered.
            self.cycle.keep_alive = False
            return
        if self._request_begun:
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
            log.info("closed the connection of %s: request headers not complete within %g s (408)", client,
                     self._header_timeout_s)
            head = [STATUS_LINE[408]]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head += [b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n" % len(MESSAGE),
                     b"connection: close\r\n\r\n", MESSAGE]
            self.transport.write(b"".join(head))
        self.transport.close()
