"""The top-level ASGI app (`uvicorn eco_service.asgi:application`): the gateway's router in front
of Django. The router owns the lifespan (Django's ASGI handler ignores it), where the MCP session
manager and the catalog prewarm run; see mcp_gateway.http_app."""

from __future__ import annotations

import asyncio
import logging
import os
import threading

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.db import DatabaseError, connections  # noqa: E402

from eco_service.bootstrap import prepare_database  # noqa: E402
from eco_service.checks import enforce_at_startup  # noqa: E402
from mcp_gateway.http_app import build_app, route_uvicorn_logs  # noqa: E402

# Under the uvicorn command its loggers got their own handlers (stdout, unfiltered) before this
# import; django.setup() above configured ours: uvicorn's lines (access log included) go to ours.
route_uvicorn_logs()
application = build_app(django_app=get_asgi_application())
# uvicorn runs no Django checks; build_app has just switched the configuration to HTTP, so the
# checks (a known secret key, downloads over HTTP, ...) refuse start-up here, exit status 2.
enforce_at_startup()
# A plain `uvicorn eco_service.asgi:application` on a fresh SQLite file must work like the CLI;
# under compose the one-shot migrate service has already done it, and the migration lock makes
# replicas starting together safe either way. A database that is down at start-up must not keep
# the process from serving: /readyz then answers 503 "database unavailable" until it is back.
def _prepare() -> None:
    try:
        prepare_database()
    except DatabaseError as exc:
        logging.getLogger("eco.bootstrap").warning(
            "database unavailable at start-up (%s); migrations not checked", type(exc).__name__)
    finally:
        connections.close_all()


try:
    asyncio.get_running_loop()
except RuntimeError:
    _prepare()
else:
    # `uvicorn --workers N` imports this module inside each worker's running event loop, where
    # Django refuses database work (SynchronousOnlyOperation killed every worker): use a thread.
    _thread = threading.Thread(target=_prepare, name="eco-prepare-database")
    _thread.start()
    _thread.join()
