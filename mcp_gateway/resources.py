"""Resources and resource templates: declared as specs (the guides and references come in a later
issue and are appended to RESOURCES / TEMPLATES); the protocol handlers live in server.py.
An unknown URI is the spec's JSON-RPC -32602 with data.code not_found and data.didYouMean."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from rapidfuzz import process

STATIC_TTL_MS = 24 * 3600 * 1000
DERIVED_TTL_MS = 3600 * 1000


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    description: str
    read: Callable[[], Awaitable[str]]
    mime_type: str = "text/markdown"
    ttl_ms: int = STATIC_TTL_MS

    def resource(self) -> types.Resource:
        return types.Resource(uri=self.uri, name=self.name, description=self.description, mime_type=self.mime_type)


@dataclass(frozen=True)
class TemplateSpec:
    uri_template: str  # e.g. eco://products/{productCode}
    name: str
    description: str
    read: Callable[[dict[str, str]], Awaitable[str]]
    mime_type: str = "application/json"
    ttl_ms: int = DERIVED_TTL_MS

    def template(self) -> types.ResourceTemplate:
        return types.ResourceTemplate(
            uri_template=self.uri_template, name=self.name, description=self.description, mime_type=self.mime_type
        )

    def match(self, uri: str) -> dict[str, str] | None:
        pattern = re.escape(self.uri_template)
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
        m = re.fullmatch(pattern, uri)
        return m.groupdict() if m else None


RESOURCES: list[ResourceSpec] = []
TEMPLATES: list[TemplateSpec] = []


def unknown_uri(uri: str, known: list[str]) -> MCPError:
    near = [m[0] for m in process.extract(uri, known, limit=3, score_cutoff=50)] if known else []
    return MCPError(
        code=INVALID_PARAMS,
        message=f"Unknown resource: {uri}",
        data={"code": "not_found", "uri": uri, "didYouMean": near},
    )
