"""Celery tasks: thin wrappers that run the catalog refresh service.

`refresh_catalogs_task` is what Celery beat runs on the `cache.ttl_s.catalog` interval (the
PeriodicTask is created after migrate by catalog.schedule and can be edited in the admin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync
from celery import shared_task

from catalog.models import CATALOGS

if TYPE_CHECKING:
    from catalog.services.refresh import Source

TASK_NAME = "catalog.refresh_catalogs"


# A shared task binds to the current app when used; eco_service's AppConfig makes the project's
# app (broker, eager mode without one) current at start-up, so catalog never imports the root.
@shared_task(name=TASK_NAME)
def refresh_catalogs_task(catalogs: list[str] | None = None, source: Source | None = None,
                          trigger: str = "beat") -> list[dict]:
    from catalog.services import refresh_catalogs
    from upstream.client import get_client

    async def run() -> list[dict]:
        outcomes = await refresh_catalogs(tuple(catalogs or CATALOGS), client=get_client(), source=source,
                                          trigger=trigger)
        return [o.to_dict() for o in outcomes]

    # async_to_sync (not asyncio.run): the ORM work comes back to this thread and its connection.
    return async_to_sync(run)()
