from django.apps import AppConfig


class TablesConfig(AppConfig):
    """Owns the HTTP deployment's dataset store: its datasets' rows (state, size, last use) and the
    Celery task that builds them."""

    name = "tables"
    default_auto_field = "django.db.models.BigAutoField"
