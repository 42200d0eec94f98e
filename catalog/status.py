"""How warm and how fresh the catalogs are: for eco_ping's `catalog`, /readyz and the admin.

    catalog_status() -> {"products": {"count", "ageSeconds", "source", "refreshedAt", "stale",
                                      "lastError"}, "sites": ..., "releases": ..., "locations": ...,
                         "ready": bool, "degraded": bool}
    readiness() -> (False, {"status": "warming"})                      until products and sites exist
                 | (True, {"status": "ready", "catalogs": {name: ageSeconds|None},
                           "degraded": bool, "tokenConfigured": bool})

Both are synchronous and read the database (one small query): from async code call them
through `asgiref.sync.sync_to_async`.

`degraded` is true when the GraphQL breaker is open (catalogs come from REST) or when the last
refresh attempt of a catalog failed (the previous catalog is still served).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from catalog.models import CATALOGS, CatalogState
from eco_core.config import EcoConfig, get_config

READY_NEEDS = ("products", "sites")


def ttl_for(catalog: str, cfg: EcoConfig) -> int:
    ttl = cfg.cache.ttl_s
    return {"releases": ttl.releases, "locations": ttl.locations}.get(catalog, ttl.catalog)


def _graphql_breaker_open() -> bool:
    from upstream.client import graphql_breaker_state

    return graphql_breaker_state().get("state") == "open"


def _entry(state: CatalogState | None, catalog: str, cfg: EcoConfig, now: datetime) -> dict[str, Any]:
    if state is None or state.refreshed_at is None:
        return {"count": 0, "ageSeconds": None, "source": None, "refreshedAt": None, "stale": True,
                "lastError": state.last_error or None if state else None}
    age = int((now - state.refreshed_at).total_seconds())
    return {
        "count": state.row_count,
        "ageSeconds": max(age, 0),
        "source": state.source or None,
        "refreshedAt": state.refreshed_at.isoformat().replace("+00:00", "Z"),
        "stale": age > ttl_for(catalog, cfg),
        "lastError": state.last_error or None,
    }


def catalog_status(cfg: EcoConfig | None = None) -> dict[str, Any]:
    cfg = cfg or get_config()
    now = datetime.now(UTC)
    states = {s.catalog: s for s in CatalogState.objects.all()}
    out: dict[str, Any] = {c: _entry(states.get(c), c, cfg, now) for c in CATALOGS}
    out["ready"] = all(out[c]["count"] > 0 for c in READY_NEEDS)
    out["degraded"] = _graphql_breaker_open() or any(s.last_error for s in states.values())
    return out


def readiness(cfg: EcoConfig | None = None) -> tuple[bool, dict[str, Any]]:
    cfg = cfg or get_config()
    status = catalog_status(cfg)
    if not status["ready"]:
        return False, {"status": "warming"}
    return True, {
        "status": "ready",
        "catalogs": {c: status[c]["ageSeconds"] for c in CATALOGS},
        "degraded": status["degraded"],
        "tokenConfigured": cfg.eco.api_token is not None,
    }


def upstream_cache_info() -> dict[str, Any]:
    """Entries and hit rate of the upstream answer cache (this process's view; see the client)."""
    from upstream.client import cache_info_all

    return cache_info_all()
