"""`python manage.py eco_mcp [--transport stdio|http] ...`: run the MCP server."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand

from eco_core import __version__
from eco_service import cli


class Command(BaseCommand):
    help = "Run the Observatory Data MCP server (stdio or HTTP)."
    requires_system_checks: list[str] = []  # run after the flags are applied, in cli.run
    transport: str | None = None

    def get_version(self) -> str:
        return f"eco-mcp {__version__}"

    def add_arguments(self, parser: Any) -> None:
        cli.add_arguments(parser, transport_choice=self.transport is None, with_version=False)

    def handle(self, *args: Any, **options: Any) -> None:
        code = cli.run(options, transport=self.transport)
        if code:
            sys.exit(code)
