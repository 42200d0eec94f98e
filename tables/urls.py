"""The dataset pages' routes (tables/pages.py), under /datasets/."""

from __future__ import annotations

from django.urls import path

from tables import pages

app_name = "datasets"

urlpatterns = [
    path("", pages.dataset_list, name="list"),
    path("<str:dataset_id>/", pages.dataset_detail, name="detail"),
    path("<str:dataset_id>/<str:table>.csv", pages.table_csv, name="csv"),
    path("<str:dataset_id>/<str:table>.parquet", pages.table_parquet, name="parquet"),
]
