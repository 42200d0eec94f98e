"""The command line shared by `eco_mcp` and `eco_mcp_stdio`: the spec's flags, mapped onto
settings paths, then one of --version / --print-config / --check / serve."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from eco_core.config import ConfigError, EcoConfig, load_config, set_config
from eco_service import __version__

log = logging.getLogger("eco.cli")


def add_arguments(parser: argparse.ArgumentParser, *, transport_choice: bool = True, with_version: bool = True) -> None:
    """Django's own parser already has --version (it prints Command.get_version()), hence the switch."""
    parser.add_argument("--config", metavar="PATH", help="YAML configuration file")
    if transport_choice:
        parser.add_argument("--transport", choices=["stdio", "http"], help="stdio (default) or http")
    parser.add_argument("--bind-address", dest="bind_address", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--bind-port", dest="bind_port", type=int, help="HTTP bind port (default 8080)")
    parser.add_argument("--log-level", dest="eco_log_level", type=str.lower,
                        choices=["debug", "info", "warning", "error", "critical"], help="log level (stderr)")
    parser.add_argument("--download-dir", dest="download_dir", metavar="PATH", help="download directory")
    parser.add_argument("--no-downloads", dest="no_downloads", action="store_true", help="disable downloads")
    parser.add_argument("--prewarm", dest="prewarm", action=argparse.BooleanOptionalAction, default=None,
                        help="build catalogs at start (default: on for http, off for stdio)")
    parser.add_argument("--print-config", dest="print_config", action="store_true",
                        help="print the resolved configuration (token masked) and exit")
    parser.add_argument("--check", action="store_true",
                        help="call the upstream once, print a JSON verdict, exit 0 when reachable else 1")
    if with_version:
        parser.add_argument("--version", dest="show_version", action="store_true", help="print the version and exit")


def flags_from_options(options: dict[str, Any], *, transport: str | None = None) -> dict[str, Any]:
    flags: dict[str, Any] = {
        "server.transport": transport or options.get("transport"),
        "server.bind_address": options.get("bind_address"),
        "server.bind_port": options.get("bind_port"),
        "server.log_level": options.get("eco_log_level"),
        "downloads.directory": options.get("download_dir"),
        "cache.prewarm": options.get("prewarm"),
    }
    if options.get("no_downloads"):
        flags["downloads.enabled"] = False
    return flags


def configure_logging(cfg: EcoConfig) -> None:
    logging.getLogger().setLevel(cfg.server.log_level.upper())


def run(options: dict[str, Any], *, transport: str | None = None) -> int:
    """Returns the process exit code. Every word for people goes to stderr, except the answers
    to --version, --print-config and --check, which are the command's output."""
    if options.get("show_version"):
        sys.stdout.write(f"eco-mcp {__version__}\n")
        return 0
    try:
        cfg = load_config(flags=flags_from_options(options, transport=transport), config_path=options.get("config"))
    except ConfigError as exc:
        sys.stderr.write(f"eco-mcp: {exc}\n")
        return 2
    set_config(cfg)
    configure_logging(cfg)
    from django.core import checks

    problems = [m for m in checks.run_checks(tags=["eco"]) if m.level >= checks.WARNING]
    for m in problems:
        sys.stderr.write(f"eco-mcp: {m.id}: {m.msg}" + (f" ({m.hint})" if m.hint else "") + "\n")
    if any(m.is_serious() for m in problems):
        return 2
    if options.get("print_config"):
        sys.stdout.write(json.dumps(cfg.masked_dict(), indent=2, default=str) + "\n")
        return 0
    if options.get("check"):
        import asyncio

        from mcp_gateway.health import check

        verdict = asyncio.run(check(cfg))
        sys.stdout.write(json.dumps(verdict, indent=2) + "\n")
        return 0 if verdict.get("reachable") else 1

    if cfg.is_http:  # stdio prepares it while its first answers (the tool list) go out
        from eco_service.bootstrap import prepare_database

        prepare_database()
    try:
        if cfg.is_http:
            from mcp_gateway.http_app import serve_http

            serve_http(cfg)
        else:
            from mcp_gateway.stdio import serve_stdio

            serve_stdio(cfg, load_apps=load_apps, finish_setup=finish_setup)
    except ConfigError as exc:
        # A setting only the built server can check (limits.tools_list_max_bytes).
        sys.stderr.write(f"eco-mcp: {exc}\n")
        return 2
    return 0


def load_apps(installed: list[str] | None = None) -> None:
    """The rest of django.setup() when run_command started without it (the apps are not loaded):
    Django's whole logging configuration (run_command applied only this project's LOGGING), then
    the level the eco configuration chose, as run does after django.setup(); the URL
    prefix; the apps (`installed`, default INSTALLED_APPS)."""
    from django.apps import apps
    from django.conf import settings
    from django.urls import set_script_prefix
    from django.utils.log import configure_logging as configure_django_logging

    from eco_core.config import get_config

    if not apps.ready:
        configure_django_logging(settings.LOGGING_CONFIG, settings.LOGGING)
        configure_logging(get_config())
        set_script_prefix("/" if settings.FORCE_SCRIPT_NAME is None else settings.FORCE_SCRIPT_NAME)
        apps.populate(settings.INSTALLED_APPS if installed is None else installed)


def finish_setup() -> None:
    """A stdio server's set-up (mcp_gateway.stdio.serve_stdio runs it in a worker thread before the
    first call): when the data folder's schema record says the database needs nothing
    (eco_service.schema_record), only the apps its calls use (settings.ECO_STDIO_APPS); otherwise
    every app, prepare_database, and a new record for the next start."""
    from django.apps import apps
    from django.conf import settings
    from django.db import connections

    from eco_service import schema_record

    try:
        if not apps.ready and schema_record.settled():
            log.debug("the database is as the data folder's schema record says: loading only %s",
                      ", ".join(settings.ECO_STDIO_APPS))
            load_apps(settings.ECO_STDIO_APPS)
        else:
            from eco_service.bootstrap import prepare_database

            load_apps()
            prepare_database()
            schema_record.record()
    finally:
        connections.close_all()  # this worker thread's own connections
    import mcp_gateway.resources

    mcp_gateway.resources.RESOURCES  # noqa: B018  (runs a lazy module here, not in a request)
