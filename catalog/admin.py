"""The team's view of the catalogs: browse products, sites, releases, locations and the stored
location subtrees; see each catalog's age, staleness, the subtree walk's progress (sites done of
sites to walk) and the refresh log; refresh now (queued to Celery when a broker is configured,
else run in this request). The admin index shows freshness at a glance (templates/admin/index.html)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.templatetags.static import static
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from catalog.models import (
    CATALOGS,
    STATE_NAMES,
    SUBTREES,
    CatalogRefresh,
    CatalogState,
    LocationNodeRow,
    LocationRow,
    ProductRow,
    ProductSiteAvailabilityRow,
    ReleaseRow,
    SiteRow,
)
from catalog.status import catalog_status, upstream_cache_info, upstream_mismatch
from eco_core.config import get_config


class ReadOnlyAdmin(admin.ModelAdmin):
    """Catalog rows are replaced by refreshes; edits here would vanish at the next one."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ProductRow)
class ProductAdmin(ReadOnlyAdmin):
    list_display = ("product_code", "product_name", "product_status", "product_science_team_abbr", "level",
                    "product_has_expanded", "site_count", "latest_release")
    list_filter = ("product_status", "product_science_team_abbr", "level", "product_has_expanded", "latest_release")
    search_fields = ("product_code", "product_name", "product_description")


@admin.register(SiteRow)
class SiteAdmin(ReadOnlyAdmin):
    list_display = ("site_code", "site_name", "site_type", "state_code", "domain_code", "product_count")
    list_filter = ("site_type", "domain_code", "state_code")
    search_fields = ("site_code", "site_name", "state_name", "domain_name")


@admin.register(ReleaseRow)
class ReleaseAdmin(ReadOnlyAdmin):
    list_display = ("tag", "uuid", "generation_date", "product_count")
    search_fields = ("tag", "uuid")


@admin.register(ProductSiteAvailabilityRow)
class AvailabilityAdmin(ReadOnlyAdmin):
    list_display = ("product_code", "site_code", "first_month", "last_month", "month_count")
    list_filter = ("site_code",)
    search_fields = ("product_code", "site_code")


@admin.register(LocationRow)
class LocationAdmin(ReadOnlyAdmin):
    list_display = ("name", "location_type", "description", "domain_code", "site_code", "elevation")
    list_filter = ("location_type", "domain_code")
    search_fields = ("name", "description")


@admin.register(LocationNodeRow)
class LocationNodeAdmin(ReadOnlyAdmin):
    list_display = ("name", "location_type", "site_code", "depth", "parent", "description", "elevation")
    list_filter = ("location_type", "depth")
    search_fields = ("name", "description", "site_code")


def _wrapped(text: str) -> str:
    """Long text (an upstream error) wrapped inside its cell: a changelist cell does not wrap by
    itself, so a long error ran off the page."""
    if not text:
        return "–"
    return format_html('<div style="white-space:normal;overflow-wrap:anywhere;min-width:12em;max-width:40em">{}</div>',
                       text)


@admin.register(CatalogRefresh)
class CatalogRefreshAdmin(ReadOnlyAdmin):
    list_display = ("catalog", "started_at", "ok", "source", "trigger", "rows", "upstream_requests", "seconds",
                    "error_text")
    list_filter = ("catalog", "ok", "source", "trigger")
    date_hierarchy = "started_at"

    @admin.display(description="error", ordering="error")
    def error_text(self, obj: CatalogRefresh) -> str:
        return _wrapped(obj.error)


def _report(modeladmin, request, o: dict) -> None:
    level = messages.SUCCESS if o["ok"] else messages.ERROR
    text = (f"{o['catalog']}: {o['rows']} rows from {o['source']}, {o['requests']} requests, {o['seconds']:.1f} s"
            if o["ok"] else f"{o['catalog']}: failed ({o['error']}); the previous catalog is kept")
    modeladmin.message_user(request, text, level)


@admin.action(description="Refresh now (queued to Celery when a broker is configured)")
def refresh_now(modeladmin, request, queryset) -> None:
    from catalog.tasks import refresh_catalogs_task, refresh_location_subtrees_task

    chosen = set(queryset.values_list("catalog", flat=True))
    names = sorted(c for c in chosen if c in CATALOGS)
    kwargs = {"catalogs": names, "trigger": "admin"}
    if settings.CELERY_BROKER_URL:
        if names:
            refresh_catalogs_task.apply_async(kwargs=kwargs)
        if SUBTREES in chosen:
            refresh_location_subtrees_task.apply_async(kwargs={"trigger": "admin"})
        queued = [*names, *([SUBTREES] if SUBTREES in chosen else [])]
        modeladmin.message_user(request, f"Refresh of {', '.join(queued)} queued.", messages.INFO)
        return
    for o in refresh_catalogs_task.apply(kwargs=kwargs).get() if names else []:
        _report(modeladmin, request, o)
    if SUBTREES in chosen:
        # Without a broker the walk runs here, in this request (one upstream request per site).
        _report(modeladmin, request, refresh_location_subtrees_task.apply(kwargs={"trigger": "admin"}).get())


@admin.register(CatalogState)
class CatalogStateAdmin(ReadOnlyAdmin):
    # Narrow enough for a 1280 px window beside the admin's navigation: the two upstream addresses
    # share a column; the time of the refresh (the age says it) and the version (an internal
    # counter) are on the detail page.
    list_display = ("catalog", "rows", "age", "stale", "progress", "source", "built_from", "served",
                    "last_error_text")
    actions = [refresh_now]

    def changelist_view(self, request, extra_context=None):
        # Every catalog gets a row (and so can be refreshed) even before its first build.
        for name in STATE_NAMES:
            CatalogState.objects.get_or_create(catalog=name)
        extra = {"upstream_cache": upstream_cache_info(), **(extra_context or {})}
        return super().changelist_view(request, extra_context=extra)

    @admin.display(description="rows", ordering="row_count")
    def rows(self, obj: CatalogState) -> int:
        return obj.row_count

    @admin.display(description="age (s)")
    def age(self, obj: CatalogState):
        return catalog_status()[obj.catalog]["ageSeconds"]

    @admin.display(description="stale")
    def stale(self, obj: CatalogState) -> str:
        # Not a boolean column: its red cross on every fresh catalog read as an alarm.
        if not catalog_status()[obj.catalog]["stale"]:
            return mark_safe('<span title="fresh">–</span>')
        return format_html('<img src="{}" alt="" style="vertical-align:middle"> <strong>stale</strong>',
                           static("admin/img/icon-alert.svg"))

    @admin.display(description="last error", ordering="last_error")
    def last_error_text(self, obj: CatalogState) -> str:
        return _wrapped(obj.last_error)

    @admin.display(description="progress")
    def progress(self, obj: CatalogState) -> str:
        """Sites walked of sites to walk (the subtree refresh); 'refreshing' while a run is under way."""
        if not obj.progress_total:
            return "–"
        return f"{obj.progress_done}/{obj.progress_total} sites" + (" (refreshing)" if obj.progress_at else "")

    @admin.display(description="built from")
    def built_from(self, obj: CatalogState) -> str:
        if not obj.rest_base and not obj.graphql_url:
            return "–"
        return format_html('<div style="white-space:normal;overflow-wrap:anywhere;min-width:12em">{}<br>{}</div>',
                           obj.rest_base or "–", obj.graphql_url or "–")

    @admin.display(description="served")
    def served(self, obj: CatalogState) -> str:
        if not obj.row_count:
            return "–"
        why = upstream_mismatch(obj.rest_base, obj.graphql_url, get_config())
        return f"no: {why}" if why else "yes"
