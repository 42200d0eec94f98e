"""The beat schedule of the catalog refresh, stored with django-celery-beat.

Created after `migrate` (post_migrate) with the interval `cache.ttl_s.catalog`. An existing
entry is left as the operator set it in the admin; delete it to get the default back.
"""

from __future__ import annotations

import json

PERIODIC_TASK_NAME = "eco: refresh catalogs"


def ensure_refresh_schedule(*, using: str = "default", **_: object) -> None:
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    from catalog.tasks import TASK_NAME
    from eco_core.config import get_config

    if PeriodicTask.objects.using(using).filter(name=PERIODIC_TASK_NAME).exists():
        return
    every = get_config().cache.ttl_s.catalog
    interval, _ = IntervalSchedule.objects.using(using).get_or_create(every=every, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.using(using).create(
        name=PERIODIC_TASK_NAME,
        task=TASK_NAME,
        interval=interval,
        kwargs=json.dumps({"trigger": "beat"}),
        description="Rebuild the product, site, release and location catalogs from NEON.",
    )
