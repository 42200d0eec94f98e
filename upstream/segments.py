"""Identifiers that become one URL path segment of an upstream request: refused before any request
by the client's path builder (upstream.client), named after the tool's own field by the gateway
(mcp_gateway.arguments). A module of its own so that the gateway, which a stdio server imports
before its first answer, does not import the HTTP client (httpx, the reply models) to know it."""

from __future__ import annotations

from eco_core.errors import EcoError


class PathSegmentError(EcoError):
    """An identifier that cannot be one path segment: invalid_argument naming the upstream's name
    for it (`parameter`); the gateway names the tool's own field that held `value`."""

    def __init__(self, parameter: str, value: str) -> None:
        super().__init__("invalid_argument", segment_message(parameter, value), details={"field": parameter})
        self.parameter, self.value = parameter, value


def segment_message(field: str, value: str) -> str:
    shown = repr(value[:60] + ("..." if len(value) > 60 else ""))
    return (f"{field}: {shown} is not an identifier: it must not be empty, '.' or '..', or contain '/', '\\' or "
            "control characters, written or percent-encoded (it is decoded once, and must not need decoding again)")
