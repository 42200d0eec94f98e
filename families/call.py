"""What a family's read may know about its call besides its validated input: the configuration,
the transport, the token's source (never the token), the upstream client, and the continuation of
a multi-round call. The gateway builds one per call; a read that needs the caller to choose raises
`InputNeeded`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from eco_core import request_state
from eco_core.config import EcoConfig
from eco_core.errors import EcoError
from upstream.context import Accounting, TokenSource

if TYPE_CHECKING:
    from upstream.client import UpstreamClient


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
    # The tools listed on this call's transport (eco_ping says downloads are enabled only when the
    # download tool is among them).
    listed_tools: frozenset[str] = frozenset()
    # The upstream client; None: the process's shared client of this event loop, made on first use.
    upstream: UpstreamClient | None = None
    # Sends an MCP progress notification (progress, total, message) for this call, a no-op when
    # the client did not ask for progress; None outside a server. Long reads (eco_stack_tables)
    # report through it.
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    # The handshake era's way to ask (2025-11-25 and before, where input_required does not exist):
    # sends the question as an elicitation/create request to a client that declared elicitation
    # and returns its answer (action, content). None where the connection cannot carry it.
    ask_back: Callable[[InputNeeded], Awaitable[dict[str, Any]]] | None = None

    @property
    def client(self) -> UpstreamClient:
        if self.upstream is None:
            # Imported on first use: listing tools needs no upstream client (httpx and its models).
            from upstream.client import get_client

            self.upstream = get_client()
        return self.upstream

    @property
    def token_configured(self) -> bool:
        return self.token_source != "none"

    @property
    def can_ask(self) -> bool:
        """input_required exists from 2026-07-28 on, and only for clients that declared elicitation."""
        return self.client_elicitation and self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def can_ask_back(self) -> bool:
        """An earlier era's client that declared elicitation, on a connection that carries a server
        request: asked mid-call, then the read runs again as a 2026-07-28 retry would."""
        return (self.client_elicitation and self.ask_back is not None and self.request_state is None
                and self.protocol_version not in MODERN_PROTOCOL_VERSIONS)

    def continuation(self) -> dict[str, Any] | None:
        """The decoded requestState of a retried call (question, candidates), or None on a first
        call; a malformed or expired state is `invalid_argument`. The tool re-validates the answer."""
        return None if self.request_state is None else request_state.decode(self.request_state)


class InputNeeded(Exception):
    """Raised by a read that needs the caller to choose (the sample-class question). Clients
    that declared elicitation get an `input_required` result whose `requestState` holds only the
    question and candidates; every other client gets `fallback` (ambiguous_input)."""

    def __init__(self, *, key: str, message: str, requested_schema: dict[str, Any], question: dict[str, Any],
                 candidates: list[Any], fallback: EcoError) -> None:
        super().__init__(message)
        self.key, self.message, self.requested_schema = key, message, requested_schema
        self.question, self.candidates, self.fallback = question, candidates, fallback
