"""Registration of the health family's tool (families/health.py)."""

from __future__ import annotations

from families import health
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_ping",
        title="Service status",
        description=(
            "Server health: version, protocol, transport, token (configured, source), catalog, cache and "
            "rate-limit status; check_api=true also checks the upstream."
        ),
        surface="diagnostics",
        input_model=health.PingInput,
        output_model=health.PingOutput,
        read=health.ping,
        endpoints=("GET /taxonomy",),
    )
]
