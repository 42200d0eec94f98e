"""Header values are trimmed before the protocol checks (the conformance
scenario sep-2243-server-accepts-whitespace-header-value). httpx refuses to send such values,
so the request is written on a raw socket."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

from tests.gateway.wire import modern_request


def _raw_post(url: str, body: dict, headers: dict[str, str]) -> dict:
    u = urlsplit(url)
    data = json.dumps(body).encode()
    lines = [f"POST {u.path} HTTP/1.1", f"Host: {u.netloc}", "Connection: close",
             f"Content-Length: {len(data)}", *(f"{k}:{v}" for k, v in headers.items())]
    with socket.create_connection((u.hostname, u.port), timeout=30) as sock:
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + data)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, payload = reply.partition(b"\r\n\r\n")
    text = payload.decode()
    if "chunked" in head.decode().lower():
        size, _, rest = text.partition("\r\n")
        text = rest[: int(size, 16)]
    if text.startswith("event:") or text.startswith("data:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)


def test_surrounding_whitespace_in_routing_header_values_is_accepted(http_server):
    body, headers = modern_request("tools/call", {"name": "eco_ping", "arguments": {}})
    headers = {k: f" {v}" for k, v in headers.items()}
    with http_server() as srv:
        ok = _raw_post(srv.url, body, {**headers, "Mcp-Name": "   eco_ping  ", "Mcp-Method": "  tools/call \t"})
        wrong = _raw_post(srv.url, body, {**headers, "Mcp-Name": "  eco_other "})
    assert "error" not in ok and ok["result"]["isError"] is False, ok
    assert wrong["error"]["code"] == -32020  # trimming does not make a different name match
