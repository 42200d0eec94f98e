"""A tool result's text and structured content written into the HTTP reply as bytes we already
made, instead of being walked and escaped by the SDK.

Every tool result carries the same JSON twice: as text content (a string) and as structured
content (an object). We make that JSON once (calls._fitted). The SDK, given the object, walks it
four more times per reply: it validates and dumps the result for the protocol version, wraps and
dumps the JSON-RPC response, and json.dumps the whole reply, escaping the text again. On a 20 KB
availability answer that was most of the call (bench/bench_instructions.py). So on the HTTP
transport the SDK is handed two small placeholders, a string for the text and an object for the
structured content, and the reply's bytes get the text as a JSON string literal and the JSON
text itself where the placeholders are. Everything else about the reply (envelope, id, _meta
stamp, status, framing) is still the SDK's, and every inbound check still runs in the SDK.

    scope()        opened per MCP POST by http_app; without one, defer() declines and the SDK
                   gets the result itself (stdio, tests calling the server directly)
    defer(text)    the two placeholders for a result whose text is `text`, registered in the scope
    keep_encoded   encode a kept result's text once (calls._finish), for every reply it goes into
    fill(body)     a reply body with every registered placeholder found in it replaced

A placeholder holds a fresh random nonce: the string placeholder is the nonce, the object one
{"io.eco-mcp/splice": nonce}. Inside JSON text a quote within a string is always escaped, so
the nonce in quotes can only be a placeholder's own value, wherever the SDK puts it and whatever
separators it uses. A placeholder not found in a body stays registered; http_app logs that as
a bug when the reply ends, and it can only mean a reply shape this module does not know.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from eco_core.memo import memos

KEY = "io.eco-mcp/splice"
_OBJECT_HEAD = b'{"' + KEY.encode() + b'":'

_open: ContextVar[dict[bytes, tuple[bool, bytes]] | None] = ContextVar("eco_splices", default=None)


@contextmanager
def scope() -> Iterator[dict[bytes, tuple[bool, bytes]]]:
    """The splices of one reply: nonce (quoted, as it appears in JSON) -> (whether it stands for
    an object, the JSON bytes in its place). The dict is shared with tasks the SDK starts for
    the request (they copy the context, not the dict)."""
    pending: dict[bytes, tuple[bool, bytes]] = {}
    token = _open.set(pending)
    try:
        yield pending
    finally:
        _open.reset(token)


def defer(text: str) -> tuple[str, dict[str, str]] | None:
    """Placeholders for a tool result's text content `text` and for its structured content (the
    object `text` is the JSON of), or None when no reply scope is open."""
    pending = _open.get()
    if pending is None:
        return None
    nonces = os.urandom(24).hex()  # one system call for both
    as_string, as_object = nonces[:24], nonces[24:]
    quoted_text, raw = _encoded.get(text) or _encode(text)
    pending[b'"' + as_string.encode() + b'"'] = (False, quoted_text)
    pending[b'"' + as_object.encode() + b'"'] = (True, raw)
    return as_string, {KEY: as_object}


# The encodings of kept results' texts (calls._finish hands them over): such a text is the same
# object call after call, and quoting a 20 KB text alone was a third of such a call's instructions.
_encoded = memos.by_identity("splice.encoded", max_entries=64, max_weight=4 << 20)


def _encode(text: str) -> tuple[bytes, bytes]:
    """`text` as a JSON string literal and as UTF-8 bytes."""
    return json.dumps(text, ensure_ascii=False).encode(), text.encode()


def keep_encoded(text: str) -> None:
    """Encode a kept result's text once, for every reply it goes into (HTTP only: without an open
    reply scope nothing is spliced)."""
    if _open.get() is not None and _encoded.get(text) is None:
        quoted, raw = _encode(text)
        _encoded.put(text, value=(quoted, raw), weight=len(quoted) + len(raw))


def fill(body: bytes, pending: dict[bytes, tuple[bool, bytes]]) -> bytes:
    """`body` with each placeholder found in it replaced (and dropped from `pending`)."""
    spans: list[tuple[int, int, bytes]] = []
    for quoted, (is_object, data) in list(pending.items()):
        at = body.find(quoted)
        if at < 0:
            continue
        if not is_object:
            spans.append((at, at + len(quoted), data))
        else:
            start, end = body.rfind(b"{", 0, at), body.find(b"}", at)
            # Our placeholder's own object, whatever the separators: anything else is left, and
            # reported as unfilled.
            if start < 0 or end < 0 or body[start:end + 1].replace(b" ", b"") != _OBJECT_HEAD + quoted + b"}":
                continue
            spans.append((start, end + 1, data))
        del pending[quoted]
    if not spans:
        return body
    parts, last = [], 0
    for start, end, data in sorted(spans):
        parts += [body[last:start], data]
        last = end
    parts.append(body[last:])
    return b"".join(parts)
