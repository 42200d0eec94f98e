"""Django app config for the NEON upstream simulator."""

from django.apps import AppConfig


class UpstreamSimConfig(AppConfig):
    name = "upstream_sim"
    label = "upstream_sim"
    verbose_name = "NEON upstream simulator"
