"""Bad configuration is caught at start-up by Django's system checks, with stable ids.

eco.E001  the eco.* / cache.* / ... configuration does not validate (message names the setting)
eco.E002  server.transport is http but downloads.enabled is true (downloads never run over HTTP)
eco.W001  server.public_base_url is not https: callers' token headers will be ignored
eco.E003  the download directory exists and is not a directory
eco.E004  server.transport is http and DJANGO_SECRET_KEY is unset, published or weak (unless
          DJANGO_INSECURE_DEV_SECRET=1): the admin's sessions and CSRF tokens would be forgeable
eco.E005  eco.api_token holds a character that is not printable ASCII (no header could carry it;
          every request with it would fail); the message never quotes the token
eco.W002  tables.query_memory_mb is above the machine's memory: the limit would never stop a query
          before the system does
eco.W003  tables.query_timeout_s is not below eco.call_deadline_s: queries are cut at the call's
          deadline instead (the setting has no effect)

`enforce_at_startup()` is how an entry point without Django's command machinery (the ASGI module
under uvicorn) runs them; `manage.py eco_mcp` runs them in eco_service.cli.
"""

from __future__ import annotations

import os
import secrets
import sys
from typing import Any, TextIO

from django.conf import settings
from django.core import checks

from eco_core.config import ConfigError, get_config
from mcp_gateway.tokens import printable_ascii

# Keys anyone can read: this repository's fallback and the values its deployment files once
# suggested. Django's own deploy check uses the same length and variety thresholds.
PUBLISHED_SECRET_KEYS = frozenset({"change-me", "changeme", "secret", "django-insecure", "eco-mcp-local-only-not-secret"})
MIN_SECRET_KEY_LENGTH = 50
MIN_SECRET_KEY_UNIQUE_CHARACTERS = 5


def _secret_key_problem(key: str) -> str | None:
    if not key or key == getattr(settings, "DEFAULT_SECRET_KEY", None):
        return "DJANGO_SECRET_KEY is not set"
    if key.strip().lower() in PUBLISHED_SECRET_KEYS or key.startswith("django-insecure-"):
        return "DJANGO_SECRET_KEY is a published default value"
    if len(key) < MIN_SECRET_KEY_LENGTH or len(set(key)) < MIN_SECRET_KEY_UNIQUE_CHARACTERS:
        return (f"DJANGO_SECRET_KEY is too weak (fewer than {MIN_SECRET_KEY_LENGTH} characters "
                f"or fewer than {MIN_SECRET_KEY_UNIQUE_CHARACTERS} different ones)")
    return None


def check_secret_key(cfg: Any) -> list[checks.CheckMessage]:
    if not cfg.is_http or getattr(settings, "ECO_INSECURE_DEV_SECRET", False):
        return []
    problem = _secret_key_problem(settings.SECRET_KEY)
    if problem is None:
        return []
    # A fresh suggestion each time: printing it leaks nothing, since it is not in use.
    suggestion = secrets.token_urlsafe(50)
    return [
        checks.Error(
            f"{problem}: the HTTP server will not start with a secret key others know",
            hint=(f"set DJANGO_SECRET_KEY to a long random value, e.g. DJANGO_SECRET_KEY={suggestion} "
                  "(generate one: python -c \"import secrets; print(secrets.token_urlsafe(50))\"); "
                  "for local development only, DJANGO_INSECURE_DEV_SECRET=1 accepts the default"),
            id="eco.E004",
        )
    ]


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
    token = cfg.eco.api_token.reveal() if cfg.eco.api_token else None
    if token is not None and not printable_ascii(token):
        found.append(
            checks.Error(
                f"eco.api_token (from {cfg.token_origin or 'the configuration'}) holds a character that is not "
                "printable ASCII: no request could carry it in the X-API-Token header",
                hint="Set the token exactly as NEON issued it (letters, digits and punctuation), without "
                     "line breaks, tabs or other characters around it.",
                id="eco.E005",
            )
        )
    found += check_tables(cfg)
    d = cfg.download_dir
    if d.exists() and not d.is_dir():
        found.append(checks.Error(f"downloads.directory {d} exists and is not a directory", id="eco.E003"))
    found += check_secret_key(cfg)
    return found


def _physical_memory_mb() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (AttributeError, ValueError, OSError):
        return None


def check_tables(cfg: Any) -> list[checks.CheckMessage]:
    found: list[checks.CheckMessage] = []
    t = cfg.tables
    if t.query_timeout_s >= cfg.eco.call_deadline_s:
        found.append(checks.Warning(
            f"tables.query_timeout_s ({t.query_timeout_s:g}) is not below eco.call_deadline_s "
            f"({cfg.eco.call_deadline_s:g}): queries are stopped at the call's deadline instead",
            hint="Lower tables.query_timeout_s (or raise eco.call_deadline_s).", id="eco.W003"))
    memory = _physical_memory_mb()
    if memory is not None and t.query_memory_mb > memory:
        found.append(checks.Warning(
            f"tables.query_memory_mb ({t.query_memory_mb}) is above this machine's memory ({memory} MB): the "
            "limit would not stop a query before the system runs out",
            hint="Set tables.query_memory_mb to a fraction of the machine's memory.", id="eco.W002"))
    return found


def enforce_at_startup(stream: TextIO | None = None) -> None:
    """Run the eco checks; print warnings and errors; exit with status 2 on an error."""
    stream = stream or sys.stderr
    problems = [m for m in checks.run_checks(tags=["eco"]) if m.level >= checks.WARNING]
    for m in problems:
        stream.write(f"eco-mcp: {m.id}: {m.msg}" + (f" ({m.hint})" if m.hint else "") + "\n")
    if any(m.is_serious() for m in problems):
        stream.flush()
        raise SystemExit(2)
