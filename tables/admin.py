"""The dataset store in the admin: read-only rows (selection, size, state, last use, who asked by
token hash); deleting one removes its files too."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from tables import store
from tables.models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("dataset_id", "state", "size_bytes", "last_used_at", "requested_by", "attempts")
    list_filter = ("state", "product")
    search_fields = ("dataset_id", "product", "requested_by")
    readonly_fields = ("dataset_id", "product", "selection", "state", "progress", "error", "planned_bytes",
                       "size_bytes", "attempts", "requested_by", "created_at", "queued_at", "started_at", "finished_at",
                       "last_used_at")
    exclude = ("plan",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Dataset) -> None:
        store.delete(obj.dataset_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Dataset]) -> None:
        for dataset_id in list(queryset.values_list("dataset_id", flat=True)):
            store.delete(dataset_id)
