from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_schedule(sender, using="default", **kwargs):
    from catalog.schedule import ensure_refresh_schedule

    ensure_refresh_schedule(using=using)


class CatalogConfig(AppConfig):
    """Owns the persistent NEON catalogs (products, sites, releases, locations), their refresh and the upstream client."""

    name = "catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # After every migrate (tests included) the beat entry exists.
        post_migrate.connect(_ensure_schedule, sender=self, dispatch_uid="catalog.ensure_schedule")
