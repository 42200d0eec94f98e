"""A bare HTTP/1.1 server on loopback for tests of how a client reads bodies: `reply(writer)`
answers each request on a kept-alive connection (False closes it); the server counts the
connections opened and keeps every request's head."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Served:
    url: str
    opened: list[int] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)


async def serve(reply: Callable[[asyncio.StreamWriter], Awaitable[bool]], path: str = "/f",
                tls: ssl.SSLContext | None = None) -> tuple[asyncio.AbstractServer, Served]:
    """With `tls`, HTTPS named as localhost (the name a test certificate carries)."""
    served = Served(url="")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.opened.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head:
                    break
                served.heads.append(head)
                if not await reply(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the client hung up (or refused our certificate): nothing more to answer
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    origin = "https://localhost" if tls is not None else "http://127.0.0.1"
    served.url = f"{origin}:{server.sockets[0].getsockname()[1]}{path}"
    return server, served


def chunked(body: bytes, piece: int = 500_000) -> Callable[[asyncio.StreamWriter], Awaitable[bool]]:
    """A reply that sends `body` with Transfer-Encoding: chunked, `piece` bytes a chunk."""
    async def reply(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(body), piece):
            part = body[i:i + piece]
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    return reply
