from django.apps import AppConfig


class McpGatewayConfig(AppConfig):
    """Owns the MCP protocol surface: transports, tool registry, envelopes, errors, budgets."""

    name = "mcp_gateway"
