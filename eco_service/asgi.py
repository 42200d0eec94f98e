"""The top-level ASGI app: a small Starlette router in front of Django.

Django's ASGI handler ignores lifespan events, so this router owns the lifespan (where the MCP
session manager and the catalog prewarm run) and sends `/healthz`, `/readyz` and `/mcp` to the
gateway; everything else (admin, static) goes to Django.
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from mcp_gateway.http_app import build_app  # noqa: E402

application = build_app(django_app=get_asgi_application())
