#!/usr/bin/env python
"""Django's command-line utility for the Observatory Data MCP service."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
    # A desktop agent spawns `eco_mcp_stdio` and waits for its tool list; Django's command
    # machinery would load every app's models (and Celery) first. This one command, when it only
    # asks to serve, starts without them (eco_service.stdio_start.run_command: same flags, checks and
    # exit statuses); anything else it hands back here.
    if sys.argv[1:2] == ["eco_mcp_stdio"]:
        from eco_service.stdio_start import run_command

        code = run_command(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
