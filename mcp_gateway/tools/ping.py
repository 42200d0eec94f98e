"""Registration of the health family's tool (families/health.py)."""

from __future__ import annotations

from families import health
from mcp_gateway.registry import ToolSpec

TOOLS = [
    ToolSpec(
        name="eco_ping",
        title="Service status",
        description=(
            "Version, protocol, transport, token availability and source (never the token), catalog "
            "warmth and upstream, cache and rate-limit status; check_api=true also checks the upstream."
        ),
        surface="diagnostics",
        input_model=health.PingInput,
        output_model=health.PingOutput,
        read=health.ping,
        endpoints=("GET /taxonomy",),
    )
]
