"""Celery tasks: thin wrappers that run the catalog refresh service.

`refresh_catalogs_task` is what Celery beat runs on the `cache.ttl_s.catalog` interval (the
PeriodicTask is created after migrate by catalog.schedule and can be edited in the admin).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import async_to_sync

from catalog.models import CATALOGS
from eco_service.celery import app

if TYPE_CHECKING:
    from catalog.services.refresh import Source

TASK_NAME = "catalog.refresh_catalogs"


# Bound to the project's app (not shared_task): eco_service/__init__ does not load the app, and
# the default app would neither run eagerly without a broker nor know the broker.
@app.task(name=TASK_NAME)
def refresh_catalogs_task(catalogs: list[str] | None = None, source: Source | None = None,
                          trigger: str = "beat") -> list[dict]:
    from catalog.services import refresh_catalogs
    from catalog.upstream.client import get_client

    async def run() -> list[dict]:
        outcomes = await refresh_catalogs(tuple(catalogs or CATALOGS), client=get_client(), source=source,
                                          trigger=trigger)
        return [o.to_dict() for o in outcomes]

    # async_to_sync (not asyncio.run): the ORM work comes back to this thread and its connection.
    return async_to_sync(run)()
