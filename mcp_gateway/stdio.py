"""The stdio transport: one MCP session over stdin/stdout for a desktop agent. stdout carries only
MCP framing; every word for people goes to stderr."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError

from eco_core import __version__
from eco_core.config import EcoConfig
from mcp_gateway.server import build_server

log = logging.getLogger("eco.gateway")


def _unreadable_line_error(exc: Exception) -> SessionMessage:
    invalid_json = isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors())
    code, message = (PARSE_ERROR, "Parse error") if invalid_json else (INVALID_REQUEST, "Invalid Request")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)))


class _AnsweredWriter:
    """The server's write side, noting each request it answers, so the end of input can wait
    for the calls still running."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pending: set[Any] = set()
        self.idle = anyio.Event()
        self.idle.set()

    def asked(self, rid: Any) -> None:
        self.pending.add(rid)
        self.idle = anyio.Event()

    async def send(self, item: SessionMessage) -> None:
        await self.inner.send(item)
        if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            self.pending.discard(item.message.id)
            if not self.pending:
                self.idle.set()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _AnsweredWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def _serve_stream(server: Server[Any], read_stream: Any, write_stream: Any) -> None:
    """Serve one stream pair; a line that is not a JSON-RPC message gets the JSON-RPC error with
    a null id (the SDK would drop it silently, leaving the client waiting). When the input ends,
    the server's input stays open until every request read so far is answered: the SDK cancels
    what is still running when its input closes, and a client that sends a tools/call and then
    closes stdin (a script, `echo ... | eco_mcp_stdio`) would get no answer."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    writer = _AnsweredWriter(write_stream)

    async def relay() -> None:
        async with send:
            async for item in read_stream:
                if isinstance(item, Exception):
                    await write_stream.send(_unreadable_line_error(item))
                    continue
                if isinstance(item.message, types.JSONRPCRequest):
                    writer.asked(item.message.id)
                await send.send(item)
            await writer.idle.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay)
        await server.run(receive, writer, server.create_initialization_options())


def serve_stdio(cfg: EcoConfig) -> None:
    from django.conf import settings
    from mcp.server.stdio import stdio_server

    from mcp_gateway.registry import use_kept_registry

    # A desktop agent starts this server and waits for its tool list: the list comes from the one
    # kept in the data folder when the code is unchanged, without importing the tool modules.
    server = build_server(cfg, use_kept_registry(Path(settings.DATA_DIR) / "cache"))

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await _serve_stream(server, read_stream, write_stream)

    log.info("eco-mcp %s serving MCP on stdio", __version__)
    anyio.run(run)
