from django.apps import AppConfig


class CatalogConfig(AppConfig):
    """Owns the persistent NEON catalogs (products, sites, releases, locations), their refresh and the upstream client."""

    name = "catalog"
    default_auto_field = "django.db.models.BigAutoField"
