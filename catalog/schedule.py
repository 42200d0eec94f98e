"""The beat schedule of the catalog refreshes, stored with django-celery-beat.

Created after `migrate` (post_migrate): the catalogs every `cache.ttl_s.catalog`, the location
subtrees (catalog.services.location_subtrees) every `cache.ttl_s.locations`. An existing entry is
left as the operator set it in the admin; delete it to get the default back.
"""

from __future__ import annotations

import json

PERIODIC_TASK_NAME = "eco: refresh catalogs"
SUBTREES_PERIODIC_TASK_NAME = "eco: refresh location subtrees"


def ensure_refresh_schedule(*, using: str = "default", **_: object) -> None:
    from catalog.tasks import SUBTREES_TASK_NAME, TASK_NAME
    from eco_core.config import get_config

    ttl = get_config().cache.ttl_s
    _ensure(using, PERIODIC_TASK_NAME, TASK_NAME, ttl.catalog,
            "Rebuild the product, site, release and location catalogs from NEON.")
    _ensure(using, SUBTREES_PERIODIC_TASK_NAME, SUBTREES_TASK_NAME, ttl.locations,
            "Store every site's location subtree (one request per site, paced to leave the rate budget "
            "to interactive calls).")


def _ensure(using: str, name: str, task: str, every: int, description: str) -> None:
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    if PeriodicTask.objects.using(using).filter(name=name).exists():
        return
    interval, _ = IntervalSchedule.objects.using(using).get_or_create(every=every, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.using(using).create(
        name=name,
        task=task,
        interval=interval,
        kwargs=json.dumps({"trigger": "beat"}),
        description=description,
    )
