"""`{% catalog_freshness %}`: the catalogs' age and staleness, for the top of the admin index."""

from __future__ import annotations

from django import template

from catalog.status import catalog_status, ttl_for, upstream_cache_info
from eco_core.config import get_config

register = template.Library()


def _age(seconds: int | None) -> str:
    if seconds is None:
        return "never built"
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


@register.inclusion_tag("admin/catalog_freshness.html")
def catalog_freshness() -> dict:
    cfg = get_config()
    status = catalog_status(cfg)
    rows = []
    for name in ("products", "sites", "releases", "locations", "subtrees"):
        entry = status[name]
        rows.append({"name": name, "age": _age(entry["ageSeconds"]), "ttl": _age(ttl_for(name, cfg)), **entry})
    return {"rows": rows, "ready": status["ready"], "degraded": status["degraded"], "cache": upstream_cache_info()}
