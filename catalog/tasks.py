"""Celery tasks: thin wrappers that run the catalog refresh service.

`refresh_catalogs_task` is what Celery beat runs on the `cache.ttl_s.catalog` interval, and
`refresh_location_subtrees_task` (every site's location subtree: ~90 upstream requests, so a task
of its own) on the `cache.ttl_s.locations` interval. The PeriodicTasks are created after migrate
by catalog.schedule and can be edited in the admin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync
from celery import shared_task

from catalog.models import CATALOGS

if TYPE_CHECKING:
    from catalog.services.refresh import BuildSource

TASK_NAME = "catalog.refresh_catalogs"
SUBTREES_TASK_NAME = "catalog.refresh_location_subtrees"


# A shared task binds to the current app when used; eco_service's AppConfig makes the project's
# app (broker, eager mode without one) current at start-up, so catalog never imports the root.
@shared_task(name=TASK_NAME)
def refresh_catalogs_task(catalogs: list[str] | None = None, source: BuildSource | None = None,
                          trigger: str = "beat") -> list[dict]:
    from catalog.services import refresh_catalogs
    from upstream.client import get_client

    async def run() -> list[dict]:
        outcomes = await refresh_catalogs(tuple(catalogs or CATALOGS), client=get_client(), source=source,
                                          trigger=trigger)
        return [o.to_dict() for o in outcomes]

    # async_to_sync (not asyncio.run): the ORM work comes back to this thread and its connection.
    return async_to_sync(run)()


@shared_task(name=SUBTREES_TASK_NAME)
def refresh_location_subtrees_task(trigger: str = "beat") -> dict:
    from catalog.services.location_subtrees import refresh_location_subtrees
    from upstream.client import get_client

    async def run() -> dict:
        return (await refresh_location_subtrees(client=get_client(), trigger=trigger)).to_dict()

    return async_to_sync(run)()
