"""The Celery app. With no CELERY_BROKER_URL, tasks run eagerly in the caller's process."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eco_service.settings")

app = Celery("eco_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
