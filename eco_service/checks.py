"""Bad configuration is caught at start-up by Django's system checks, with stable ids.

eco.E001  the eco.* / cache.* / ... configuration does not validate (message names the setting)
eco.E002  server.transport is http but downloads.enabled is true (downloads never run over HTTP)
eco.W001  server.public_base_url is not https: callers' token headers will be ignored
eco.E003  the download directory exists and is not a directory
"""

from __future__ import annotations

from typing import Any

from django.core import checks

from eco_service.config import ConfigError, get_config


@checks.register("eco")
def check_configuration(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        cfg = get_config()
    except ConfigError as exc:
        return [checks.Error(str(exc), id="eco.E001")]
    found: list[checks.CheckMessage] = []
    if cfg.is_http and cfg.downloads.enabled:
        found.append(
            checks.Error(
                "downloads.enabled is true but server.transport is http",
                hint="Downloads are stdio-only; unset downloads.enabled for HTTP deployments.",
                id="eco.E002",
            )
        )
    base = cfg.server.public_base_url
    if cfg.is_http and base and not base.startswith("https://") and not cfg.server.allow_insecure_header_token:
        found.append(
            checks.Warning(
                "server.public_base_url is not https: callers' upstream tokens will not be accepted",
                hint="Serve over https, or set server.allow_insecure_header_token for development.",
                id="eco.W001",
            )
        )
    d = cfg.download_dir
    if d.exists() and not d.is_dir():
        found.append(checks.Error(f"downloads.directory {d} exists and is not a directory", id="eco.E003"))
    return found
