"""The dataset store's Celery tasks (found by the Celery app's autodiscovery). A build's message
holds the dataset id only: what to fetch is in the dataset's row (tables.store). Beat sweeps the
builds in progress (tables.apps adds the entry), so a build whose message the broker lost is
queued again within a lease even when nobody asks about it."""

from __future__ import annotations

from celery import shared_task

from tables.store import BUILD_TASK

SWEEP_TASK = "tables.sweep_builds"


# A shared task binds to the current app when used; eco_service's AppConfig makes the project's
# app current at start-up, so tables never imports the composition root.
@shared_task(name=BUILD_TASK)
def build_dataset_task(dataset_id: str) -> None:
    from tables.store import run_build

    run_build(dataset_id)


@shared_task(name=SWEEP_TASK)
def sweep_builds_task(**_: object) -> int:
    from tables.store import sweep

    return sweep()
