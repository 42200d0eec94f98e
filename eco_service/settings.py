"""Django settings. Deployment shape comes from three optional variables:

DATABASE_URL       unset: a SQLite file in the data folder (ECO_MCP_DATA_DIR, default ./data)
REDIS_URL          unset: an in-process cache (and an in-process rate-limit bucket)
CELERY_BROKER_URL  unset: tasks run in-process; set it (usually to REDIS_URL) for worker + beat

The spec's own settings (eco.*, cache.*, ...) are in eco_service.config, not here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("ECO_MCP_DATA_DIR") or BASE_DIR / "data").expanduser()

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or "eco-mcp-local-only-not-secret"
DEBUG = os.environ.get("DJANGO_DEBUG", "").lower() in {"1", "true", "yes"}
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "*").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_beat",
    "eco_service.apps.EcoServiceConfig",
    "catalog",
    "mcp_gateway",
    "downloads",
    "upstream_sim",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
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
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "eco.sqlite3",
            # Several processes (web + in-process refresh) may write; wait instead of failing.
            "OPTIONS": {"timeout": 20},
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
STATIC_ROOT = DATA_DIR / "static"

# Logs always go to stderr: on stdio, stdout carries only MCP framing.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "eco_service.redact.RedactingFilter"}},
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
