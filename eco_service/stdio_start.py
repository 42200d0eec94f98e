"""Starting `manage.py eco_mcp_stdio`: a desktop agent spawns it and waits for its tool list, so a
plain serving invocation is run without django.setup() ahead of the command (run_command, called
by manage.py), and the apps and the database are made ready by mcp_gateway.stdio.serve_stdio's
set-up thread while the first answers go out (eco_service.cli's load_apps and finish_setup,
handed to it)."""

from __future__ import annotations

import argparse
import gc
from typing import Any


def _serving_options(args: list[str]) -> dict[str, Any] | None:
    """The command's options when `args` only asks to serve, in exactly the spelling Django's
    parser would read the same way; None for anything else (--version, --print-config, --check,
    Django's own flags, abbreviations, mistakes), which Django's command then handles as always."""
    from eco_service import cli

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    cli.add_arguments(parser, transport_choice=False, with_version=False)
    try:
        options, rest = parser.parse_known_args(args)
    except argparse.ArgumentError:
        return None
    if rest or options.print_config or options.check:
        return None
    return vars(options)


def run_command(args: list[str]) -> int | None:
    """`manage.py eco_mcp_stdio ARGS` without django.setup() ahead of the command: the same flags,
    configuration checks and exit statuses as the Django command (eco_service.cli.run), with the
    apps loaded by serve_stdio after the first answers. None: not handled here (see
    _serving_options, and settings that do not load), the caller runs Django's command.

    The cyclic collector is off while the command starts: the ~1,100 modules imported before the
    first answer make ~130,000 objects that live as long as the process, and each full pass
    walked all of them again (two or three before the first answer: ~100M instructions, more of
    the CPU than that on a loaded box, being memory-bound). serve_stdio freezes what start-up
    made and turns the collector back on before it serves; any other outcome turns it on here."""
    gc.disable()
    try:
        return _run_command(args)
    finally:
        gc.enable()


def _run_command(args: list[str]) -> int | None:
    options = _serving_options(args)
    if options is None:
        return None
    from django.conf import settings

    try:
        logging_config, logging_settings = settings.LOGGING_CONFIG, settings.LOGGING
    except Exception:  # Django's command reports it in its own words
        return None
    from django.utils.module_loading import import_string

    # The eco checks register when imported (EcoServiceConfig.ready does it under django.setup).
    from eco_service import checks, cli  # noqa: F401

    # This project's LOGGING only (stderr, redaction, levels): Django's own defaults come first in
    # django.setup(), and building their mail handler imports Django's views, HTTP and ORM layers
    # before the first answer. load_apps applies the whole of it in the set-up.
    if logging_config:
        import_string(logging_config)(logging_settings)
    return cli.run(options, transport="stdio")
