from django.apps import AppConfig


class DownloadsConfig(AppConfig):
    """Owns file downloads: planning against caps, path confinement, checksummed transfers."""

    name = "downloads"
