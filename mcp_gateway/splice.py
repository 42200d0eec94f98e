"""A tool result's structured content written into the HTTP reply as the JSON text we already
made for its text content, instead of being walked by the SDK.

Every tool result carries the same JSON twice: as text content (a string) and as structured
content (an object). We make that JSON once (calls._fitted). The SDK, given the object, walks it
four more times per reply: it validates and dumps the result for the protocol version, wraps and
dumps the JSON-RPC response, and json.dumps the whole reply. On a 20 KB availability answer that
is most of the call (bench/bench_instructions.py). So on the HTTP transport the SDK is handed a
small placeholder object in its place, and the reply's bytes get our JSON text where the
placeholder's JSON is. Everything else about the reply (envelope, id, _meta stamp, status,
framing) is still the SDK's, and every inbound check still runs in the SDK.

    scope()        opened per MCP POST by http_app; without one, defer() declines and the SDK
                   gets the object (stdio, tests calling the server directly)
    defer(text)    the placeholder for JSON text, registered in the open scope
    fill(body)     a reply body with every registered placeholder replaced

The placeholder is {"io.eco-mcp/splice": "<random hex>"}: a fresh nonce per call, so no
content can forge one. Inside JSON text a quote is always escaped within strings, so the
nonce in quotes can only be the placeholder's own value, wherever the SDK puts it and whatever
separators it uses. A placeholder not found in a body stays registered; http_app logs that as
a bug when the reply ends, and it can only mean a reply shape this module does not know.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

KEY = "io.eco-mcp/splice"

_open: ContextVar[dict[bytes, bytes] | None] = ContextVar("eco_splices", default=None)


@contextmanager
def scope() -> Iterator[dict[bytes, bytes]]:
    """The splices of one reply: nonce (quoted, as it appears in JSON) -> JSON bytes. The dict
    is shared with tasks the SDK starts for the request (they copy the context, not the dict)."""
    pending: dict[bytes, bytes] = {}
    token = _open.set(pending)
    try:
        yield pending
    finally:
        _open.reset(token)


def defer(text: str) -> dict[str, str] | None:
    """A placeholder for the JSON object `text`, or None when no reply scope is open."""
    pending = _open.get()
    if pending is None:
        return None
    nonce = os.urandom(12).hex()
    pending[b'"' + nonce.encode() + b'"'] = text.encode()
    return {KEY: nonce}


def fill(body: bytes, pending: dict[bytes, bytes]) -> bytes:
    """`body` with each placeholder found in it replaced by its JSON (and dropped from `pending`)."""
    for quoted in [q for q in pending if q in body]:
        at = body.index(quoted)
        start, end = body.rfind(b"{", 0, at), body.find(b"}", at)
        if start < 0 or end < 0 or json.loads(body[start:end + 1]) != {KEY: quoted[1:-1].decode()}:
            continue  # not our placeholder's own object: left, and reported as unfilled
        body = body[:start] + pending.pop(quoted) + body[end + 1:]
    return body
