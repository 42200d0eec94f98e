"""What a tool handler may know about its call besides its arguments.

Its own module because the registry (the handler signature), the call pipeline (which builds it)
and every tool module (which receive it) all need it, and none of them should import another
just for this type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from eco_core.config import EcoConfig
from mcp_gateway import request_state
from upstream.context import Accounting, TokenSource


@dataclass
class CallContext:
    """Never carries the token anywhere it could be dumped: the token lives in the upstream call
    scope only."""

    cfg: EcoConfig
    transport: Literal["stdio", "http"]
    protocol_version: str
    token_source: TokenSource = "none"
    token_header_ignored: bool = False
    client_elicitation: bool = False
    request_state: str | None = None
    input_responses: dict[str, Any] | None = None
    accounting: Accounting | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def token_configured(self) -> bool:
        return self.token_source != "none"

    @property
    def can_ask(self) -> bool:
        """input_required exists from 2026-07-28 on, and only for clients that declared elicitation."""
        return self.client_elicitation and self.protocol_version in MODERN_PROTOCOL_VERSIONS

    def continuation(self) -> dict[str, Any] | None:
        """The decoded requestState of a retried call (question, candidates), or None on a first
        call; a malformed or expired state is `invalid_argument`. The tool re-validates the answer."""
        return None if self.request_state is None else request_state.decode(self.request_state)
