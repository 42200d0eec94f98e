"""Hand-built 2026-07-28 requests for the protocol cases real clients never send."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def modern_request(method: str, params: dict[str, Any] | None = None, *, version: str = MODERN, rid: int = 1,
                   capabilities: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {PROTOCOL_VERSION_META_KEY: version, CLIENT_CAPABILITIES_META_KEY: capabilities or {},
            CLIENT_INFO_META_KEY: {"name": "wire-test", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": meta}}
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method, "Accept": ACCEPT,
               "Content-Type": "application/json"}
    if method in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = (params or {})["name"]
    if method == "resources/read":
        headers["Mcp-Name"] = (params or {})["uri"]
    return body, headers


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (event: message / data: ... frames)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in block.split("\n") if line.startswith("data:")]
        if data and data[0]:
            out.append(json.loads("".join(data)))
    return out


def reply(resp: Any) -> dict[str, Any]:
    """The one JSON-RPC message of a response, whichever framing it came in."""
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        msgs = sse_messages(resp.text)
        assert len(msgs) == 1, msgs
        return msgs[0]
    return resp.json()
