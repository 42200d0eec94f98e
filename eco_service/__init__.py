"""The Django project: settings, configuration model, ASGI entry and Celery app."""

__version__ = "0.1.0"
