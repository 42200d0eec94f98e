from django.apps import AppConfig


class EcoServiceConfig(AppConfig):
    """Owns the project-wide pieces: configuration checks and shared infrastructure."""

    name = "eco_service"
    label = "eco_service"

    def ready(self) -> None:
        from eco_service import celery, checks  # noqa: F401  (registers the checks; makes the Celery app current)
