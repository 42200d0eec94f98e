"""`python manage.py eco_mcp_stdio ...`: the MCP server on stdio, for desktop agents."""

from __future__ import annotations

from eco_service.management.commands.eco_mcp import Command as _Base


class Command(_Base):
    help = "Run the Observatory Data MCP server on stdio (stdout carries only MCP framing)."
    transport = "stdio"
