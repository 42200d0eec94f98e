from django.apps import AppConfig
from django.db.models.signals import post_migrate

BUILDS_SWEEP_PERIODIC_TASK_NAME = "eco: requeue lost dataset builds"
BUILDS_SWEEP_EVERY_S = 30


def _ensure_sweep(sender: object, using: str = "default", **_: object) -> None:
    """Beat's sweep of the store's builds (tables.tasks), created after migrate like the catalog's
    entries (catalog.schedule); an entry the operator changed is left as it is."""
    from catalog.schedule import _ensure
    from tables.tasks import SWEEP_TASK

    _ensure(using, BUILDS_SWEEP_PERIODIC_TASK_NAME, SWEEP_TASK, BUILDS_SWEEP_EVERY_S,
            "Queue again a dataset build no worker took within its lease (the broker lost it), and record "
            "failed one whose lease ran out.")


class TablesConfig(AppConfig):
    """Owns the HTTP deployment's dataset store: its datasets' rows (state, size, last use, build
    lease) and the Celery tasks that build them and sweep the builds in progress."""

    name = "tables"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_ensure_sweep, sender=self, dispatch_uid="tables.ensure_sweep")
