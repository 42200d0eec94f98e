"""The gateway's view of the catalog and the upstream client: the few functions it calls, in one
place, so each is wired once and faked once in tests.

    readiness(cfg) -> (bool, dict)   what /readyz answers
    prewarm(cfg)                     async; builds the catalogs (run in the background on HTTP),
                                     then starts the subtree walk in a task of its own
    warm_index(cfg)                  async; the catalogs a search needs and the index (stdio's
                                     background build at start)
    upstream_client()                the one shared upstream client
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog import status as catalog_status_mod
from eco_core.config import EcoConfig

if TYPE_CHECKING:
    from upstream.client import UpstreamClient


def readiness(cfg: EcoConfig) -> tuple[bool, dict[str, Any]]:
    return catalog_status_mod.readiness(cfg)


async def prewarm(cfg: EcoConfig) -> None:
    # Imported here: the refresh machinery (upstream client, its models, httpx) is not needed to
    # list the tools, and a stdio server lists them before anything else.
    from catalog import services as catalog_services

    await catalog_services.prewarm(cfg)
    # Then every site's location subtree (~85 requests), in a background task of its own.
    await catalog_services.refresh_subtrees_ahead(cfg, prewarm=True)


async def warm_index(cfg: EcoConfig) -> None:
    """The product and site catalogs built when missing (or refreshed when due) and the search
    index made: what a first search would otherwise wait for. No subtree walk."""
    from catalog.access import catalog_index

    await catalog_index(cfg, upstream_client())


def upstream_client() -> UpstreamClient:
    global _get_client
    if _get_client is None:
        # Imported on first use (see prewarm); an import statement in the body cost every call
        # the import machinery's look-up.
        from upstream.client import get_client as _get_client
    return _get_client()


_get_client: Any = None
