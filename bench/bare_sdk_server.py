"""The ceiling for bench/bench_vs_sdk.py: a bare `mcp` SDK low-level server with one trivial tool.

    .venv/bin/python bench/bare_sdk_server.py --http PORT    stateless Streamable HTTP, one uvicorn worker
    .venv/bin/python bench/bare_sdk_server.py --stdio        stdio

Over HTTP it answers a 2026-07-28 tools/call with one SSE frame, as eco-mcp does (the SDK answers
a quick modern request as application/json; eco-mcp's http_app reframes it, so this does the
same in the same way), so both servers send the same framing. It imports nothing of the project.

With ECO_BARE_PAYLOAD naming a JSON file, the tool returns that object instead of {"pong": "ok"}
(a JSON list of objects: one per call in turn), as this service returns a result: the object as
structured content and its compact JSON (mcp_gateway.budget.encode, made per call as ours is) as
the one text content. That is the SDK's own cost of carrying a result of that size, which no
change in the service can remove: the floor bench_instructions' `bare_as_<case>` measures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from collections.abc import MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

TOOL = types.Tool(name="ping", description="Answers pong.", input_schema={"type": "object", "properties": {}})


def _payloads() -> list[dict[str, Any]] | None:
    path = os.environ.get("ECO_BARE_PAYLOAD")
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        loaded = json.load(f)
    payloads = loaded if isinstance(loaded, list) else [loaded]
    if not payloads or not all(isinstance(p, dict) for p in payloads):
        raise SystemExit(f"ECO_BARE_PAYLOAD {path}: an object or a non-empty list of objects")
    return payloads


def build() -> Server[Any]:
    payloads = _payloads()
    turn = itertools.cycle(payloads) if payloads else None

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[TOOL])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        if turn is None:
            body = {"pong": "ok"}
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(body))],
                                        structured_content=body, is_error=False)
        body = next(turn)
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)  # mcp_gateway.budget.encode
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=body, is_error=False)

    return Server("bare-sdk", version="1", on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=lambda name: TOOL.input_schema if name == "ping" else None)


class _SseFrame:
    """One `event: message` SSE frame around a 200 JSON reply (what eco-mcp's http_app does)."""

    def __init__(self, send: Any) -> None:
        self.send, self.body = send, bytearray()
        self.start: MutableMapping[str, Any] | None = None

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            ctype = dict(message.get("headers", [])).get(b"content-type", b"")
            if message["status"] == 200 and ctype.startswith(b"application/json"):
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            frame = b"event: message\r\ndata: " + bytes(self.body) + b"\r\n\r\n"
            headers = [(k, v) for k, v in self.start.get("headers", []) if k not in (b"content-type", b"content-length")]
            headers += [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform"),
                        (b"content-length", str(len(frame)).encode())]
            await self.send({**self.start, "headers": headers})
            await self.send({"type": "http.response.body", "body": frame})
            self.start = None
            return
        await self.send(message)


def serve_http(port: int) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=build(), json_response=False, stateless=True, security_settings=None)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            async with manager.run():
                await send({"type": "lifespan.startup.complete"})
                await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/healthz":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await manager.handle_request(scope, receive, _SseFrame(send))

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", server_header=False)


def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build()

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--http", type=int, metavar="PORT")
    group.add_argument("--stdio", action="store_true")
    opts = parser.parse_args()
    if opts.stdio:
        serve_stdio()
    else:
        serve_http(opts.http)
