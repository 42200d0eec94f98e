"""The dataset store's Celery task (found by the Celery app's autodiscovery). Its message holds
the dataset id only: what to fetch is in the dataset's row (tables.store)."""

from __future__ import annotations

from celery import shared_task

from tables.store import BUILD_TASK


# A shared task binds to the current app when used; eco_service's AppConfig makes the project's
# app current at start-up, so tables never imports the composition root.
@shared_task(name=BUILD_TASK)
def build_dataset_task(dataset_id: str) -> None:
    from tables.store import run_build

    run_build(dataset_id)
