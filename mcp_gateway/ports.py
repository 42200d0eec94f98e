"""The gateway's view of the catalog and the upstream client: the few functions it calls, in one
place, so each is wired once and faked once in tests.

    catalog_status() -> dict      per catalog: count, ageSeconds, source, stale; plus "ready"
    readiness() -> (bool, dict)   what /readyz answers
    prewarm(cfg)                  async; builds the catalogs (run in the background on HTTP)
    upstream_client()             the one shared upstream client
"""

from __future__ import annotations

from typing import Any

from eco_service.config import EcoConfig


def catalog_status() -> dict[str, Any]:
    from catalog.status import catalog_status as impl

    return impl()


def readiness() -> tuple[bool, dict[str, Any]]:
    from catalog.status import readiness as impl

    return impl()


async def prewarm(cfg: EcoConfig) -> None:
    from catalog.services import prewarm as impl

    await impl(cfg)


def upstream_client() -> Any:
    from catalog.upstream.client import get_client

    return get_client()
