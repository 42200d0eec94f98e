"""The Celery app. With no CELERY_BROKER_URL, tasks run eagerly in the caller's process.

Each worker, as it starts, queues the first location subtree walk (eco_service.tasks'
first_subtree_walk) on a queue it consumes from: beat's first run of it is hours away."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")

app = Celery("eco_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def queue_first_subtree_walk(sender: Any = None, **_: Any) -> None:
    from eco_service.tasks import FIRST_WALK_TASK

    consumer_app = getattr(sender, "app", app)
    # A worker started with -Q consumes only those queues: the task must go to one of them.
    queues = list(consumer_app.amqp.queues.consume_from or ())
    queue = queues[0] if queues else consumer_app.conf.task_default_queue
    try:
        consumer_app.send_task(FIRST_WALK_TASK, queue=queue)
    except Exception:
        # The broker just answered this worker; if it fails now, beat still walks them later.
        logging.getLogger("eco.ops").warning("could not queue the first subtree walk", exc_info=True)
