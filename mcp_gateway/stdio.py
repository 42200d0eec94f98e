"""The stdio transport: one MCP session over stdin/stdout for a desktop agent. stdout carries only
MCP framing; every word for people goes to stderr."""

from __future__ import annotations

import logging
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


async def _serve_stream(server: Server[Any], read_stream: Any, write_stream: Any) -> None:
    """Serve one stream pair; a line that is not a JSON-RPC message gets the JSON-RPC error with
    a null id (the SDK would drop it silently, leaving the client waiting)."""
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def relay() -> None:
        async with send:
            async for item in read_stream:
                if isinstance(item, Exception):
                    await write_stream.send(_unreadable_line_error(item))
                else:
                    await send.send(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(relay)
        await server.run(receive, write_stream, server.create_initialization_options())


def serve_stdio(cfg: EcoConfig) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(cfg)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await _serve_stream(server, read_stream, write_stream)

    log.info("eco-mcp %s serving MCP on stdio", __version__)
    anyio.run(run)
