"""`eco-mcp [flags]`, the console command the package installs: the MCP server on stdio, what a
desktop client starts. The same as `python manage.py eco_mcp_stdio [flags]` from any folder
(`--version`, `--print-config`, `--check` and the other flags of that command work too)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    from eco_service.stdio_start import run_command

    args = sys.argv[1:]
    code = run_command(args)
    if code is not None:
        sys.exit(code)
    # Anything the fast path leaves (a flag it does not serve with, settings that do not load):
    # Django's command, which says it in its own words.
    from django.core.management import execute_from_command_line

    execute_from_command_line(["eco-mcp", "eco_mcp_stdio", *args])
