from django.apps import AppConfig


class McpGatewayConfig(AppConfig):
    """The MCP surface as a Django app: protocol, transports, tool registry, envelopes and error
    results, budgets (the error tree itself is eco_core.errors)."""

    name = "mcp_gateway"
