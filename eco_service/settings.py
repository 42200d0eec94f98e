"""Django settings. Deployment shape comes from three optional variables:

DATABASE_URL       unset: a SQLite file in the data folder (ECO_MCP_DATA_DIR, default ./data; relative
                   to the checkout)
REDIS_URL          unset: an in-process cache (and an in-process rate-limit bucket)
CELERY_BROKER_URL  unset: tasks run in-process; set it (usually to REDIS_URL) for worker + beat

The spec's own settings (eco.*, cache.*, ...) are in eco_core.config, not here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
# A checkout (or the image's /app) keeps its data beside manage.py; a package installed without one
# (the eco-mcp command from a wheel) in the user's data folder, never inside site-packages.
_DEFAULT_DATA_DIR = (BASE_DIR / "data" if (BASE_DIR / "manage.py").is_file()
                     else Path(os.environ.get("XDG_DATA_HOME") or "~/.local/share") / "eco-mcp")
DATA_DIR = Path(os.environ.get("ECO_MCP_DATA_DIR") or _DEFAULT_DATA_DIR).expanduser()
if not DATA_DIR.is_absolute() and (BASE_DIR / "manage.py").is_file():
    # Relative to the checkout, as the README's examples mean it: a desktop client starts the
    # server from a folder of its own choosing, where data/sim would be a stranger's folder.
    DATA_DIR = BASE_DIR / DATA_DIR

# Published in this file, so only good for stdio (no sessions, no admin) and explicit development:
# HTTP start-up refuses it (check eco.E004) unless DJANGO_INSECURE_DEV_SECRET=1.
DEFAULT_SECRET_KEY = "eco-mcp-local-only-not-secret"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or DEFAULT_SECRET_KEY
ECO_INSECURE_DEV_SECRET = os.environ.get("DJANGO_INSECURE_DEV_SECRET", "").strip().lower() in {"1", "true", "yes"}
DEBUG = os.environ.get("DJANGO_DEBUG", "").lower() in {"1", "true", "yes"}


class _FromEcoConfig(list[str]):
    """A Django host/origin list computed from the active eco configuration when read, so the
    admin follows the same allow-list as /mcp, including flags applied after settings load
    (`--bind-address`). Django insists on a list; the list's own storage is refreshed on each
    read too, for any reader that bypasses these methods. A configuration that does not validate
    allows nothing (eco.E001 reports it)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self._seen: object = None

    def _values(self) -> list[str]:
        from eco_core.config import ConfigError, get_config
        from mcp_gateway import origin

        try:
            cfg = get_config()
        except ConfigError:
            cfg = None
        if cfg is None or cfg is not self._seen:
            values = [] if cfg is None else getattr(origin, self._name)(cfg)
            super().__setitem__(slice(None), values)
            self._seen = cfg
        return list(super().__iter__())

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())

    def __getitem__(self, index: Any) -> Any:
        return self._values()[index]

    def __contains__(self, item: object) -> bool:
        return item in self._values()

    def __repr__(self) -> str:
        return repr(self._values())


ALLOWED_HOSTS = _FromEcoConfig("django_allowed_hosts")
CSRF_TRUSTED_ORIGINS = _FromEcoConfig("django_csrf_trusted_origins")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    # Only for its templates and static files: the ops API's docs page then uses the local Swagger UI.
    "ninja",
    "eco_service.apps.EcoServiceConfig",
    "catalog",
    "mcp_gateway",
    "downloads",
    "tables",
    "upstream_sim",
]

# What a stdio server's calls use: the apps with the models its tools read (only the catalog's).
# A stdio server loads only these when the data folder's schema record says the database needs
# nothing (eco_service.cli.finish_setup, eco_service.schema_record); the others serve HTTP, the
# admin and Celery, and migrating the database loads them all (every app's migrations).
ECO_STDIO_APPS = ["catalog", "mcp_gateway", "downloads"]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (the admin's CSS, JS, icons) are answered here, before sessions and CSRF.
    "eco_service.static.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "eco_service.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "eco_service.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL") or ""
DATABASES: dict[str, Any]
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # A database host that drops packets (rather than refusing) would otherwise hold each
        # catalog call for the kernel's TCP timeout; a URL's own ?connect_timeout= wins.
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 5)
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "eco.sqlite3",
            # Several processes (web + in-process refresh) may write; wait instead of failing.
            # IMMEDIATE: a transaction takes the write lock when it begins, so one that read first
            # never has to upgrade, which SQLite refuses at once ("database is locked") whatever the
            # timeout when another writer is waiting (parallel stack calls got catalog_unavailable).
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL") or ""
CACHES: dict[str, Any]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": os.environ.get("ECO_MCP_CACHE_PREFIX", "eco"),
            "TIMEOUT": None,
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "eco-upstream",
            "TIMEOUT": None,
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    }

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or ""
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
# No broker: run tasks in the calling process so one person needs nothing else.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
# Built with the code (`collectstatic` in scripts/setup and in the image), not data: outside the
# data folder, so a volume mounted on /app/data or a demo's own data folder does not hide it.
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves STATIC_ROOT whatever DEBUG says. Where nothing was collected (a checkout that
# skipped scripts/setup, a wheel installed elsewhere) it serves the apps' own static folders, so
# the admin is never unstyled; the collected copy is what deployments serve.
# (The dataset pages' scripts, tables/static/datasets, count too: a folder collected before them.)
WHITENOISE_USE_FINDERS = not all((STATIC_ROOT / app).is_dir() for app in ("admin", "datasets"))

# Logs always go to stderr: on stdio, stdout carries only MCP framing.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "eco_core.redact.RedactingFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "formatter": "plain",
            "filters": ["redact"],
        }
    },
    "root": {"handlers": ["stderr"], "level": os.environ.get("ECO_MCP_SERVER__LOG_LEVEL", "INFO").upper()
             if os.environ.get("ECO_MCP_SERVER__LOG_LEVEL", "").lower() in {"debug", "info", "warning", "error", "critical"}
             else "INFO"},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # The SDK logs "Terminating session: None" at INFO for every stateless request.
        "mcp.server.streamable_http": {"level": "WARNING"},
    },
}
