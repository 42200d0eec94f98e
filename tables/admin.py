"""The dataset store in the admin: read-only rows (selection, size in MB, state, last use, who asked
by token hash), each ready one linking to its page (eco_service/dataset_pages.py); deleting one removes its
files too."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from tables import store
from tables.models import READY, Dataset


def mb(size: int | None) -> str:
    """A size as people read it (the admin and the dataset pages)."""
    return f"{(size or 0) / 1_000_000:,.1f} MB"


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("page", "state", "size", "last_used_at", "requested_by", "attempts")
    list_filter = ("state", "product")
    search_fields = ("dataset_id", "product", "requested_by")
    readonly_fields = ("dataset_id", "product", "selection", "state", "progress", "error", "planned_bytes",
                       "size_bytes", "attempts", "requested_by", "created_at", "queued_at", "started_at", "finished_at",
                       "last_used_at")
    exclude = ("plan",)

    @admin.display(description="dataset", ordering="dataset_id")
    def page(self, obj: Dataset) -> str:
        """The dataset's page (eco_service/dataset_pages.py) once it is ready."""
        if obj.state != READY:
            return obj.dataset_id
        return format_html('<a href="{}">{}</a>', reverse("datasets:detail", args=[obj.dataset_id]), obj.dataset_id)

    @admin.display(description="size", ordering="size_bytes")
    def size(self, obj: Dataset) -> str:
        return mb(obj.size_bytes)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Dataset) -> None:
        store.delete(obj.dataset_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Dataset]) -> None:
        for dataset_id in list(queryset.values_list("dataset_id", flat=True)):
            store.delete(dataset_id)
