"""The ops API's interactive docs page, served with its own scripts and styles (nothing from the
internet; tests/browser loads it in Chromium), and its cache figures: with Redis they count the
shared cache, every process's entries, not the few this process happened to write."""

from __future__ import annotations

import re
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.staticfiles import finders

from eco_core import config as eco_config
from upstream import redis_link
from upstream.cache import UpstreamCache

TOKEN = "ops-token-for-tests-0123456789"
BEARER = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


@pytest.fixture
def ops_cfg(active_config):
    return active_config(eco_config.load_config(env={"ECO_MCP_SERVER__OPS_TOKEN": TOKEN}, warn=False))


def test_the_docs_page_loads_swagger_from_this_service_only(client, db):
    resp = client.get("/api/ops/docs")
    assert resp.status_code == 200 and resp["content-type"].startswith("text/html")
    page = resp.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/static/ninja/swagger-ui-bundle.js" in assets and "/static/ninja/swagger-ui.css" in assets
    assert all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    assert "cdn" not in page.lower() and '"url": "/api/ops/openapi.json"' in page
    assert '"validatorUrl": null' in page  # Swagger's badge would ask validator.swagger.io
    # Every asset it names is one the static files serve.
    assert all(finders.find(a.removeprefix("/static/")) for a in assets)


@pytest.mark.redis
def test_with_redis_the_cache_figures_count_every_process_s_entries(ops_cfg, client, db, settings, redis_url):
    prefix = f"eco-test-{uuid.uuid4().hex[:8]}"
    settings.REDIS_URL = redis_url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": redis_url, "KEY_PREFIX": prefix}}

    async def scenario() -> dict:
        # Written by a cache object this process's clients do not own: as another worker would.
        other = UpstreamCache(ops_cfg.cache, redis_client=redis_link.connect(redis_url, ops_cfg.cache),
                              link=redis_link.link_for(redis_url, ops_cfg.cache))
        try:
            for i in range(7):
                await other.put(f"answer-{i}", 60, {"i": i})
            resp = await sync_to_async(client.get)("/api/ops/upstream/cache", **BEARER)
            return resp.json()
        finally:
            await other.clear()

    info = async_to_sync(scenario)()
    assert info["shared"] is True and info["backend"] == "redis"
    assert info["entries"] == 7 and info["maxEntries"] == ops_cfg.cache.max_entries
