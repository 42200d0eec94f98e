"""The composition root: Django settings, URLs, the ASGI app, the CLI and the Celery app. It may
import every package; no package imports it."""

from eco_core import __version__

__all__ = ["__version__"]
