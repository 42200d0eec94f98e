from django.contrib import admin
from django.urls import path

from eco_service.ops_api import api as ops_api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/ops/", ops_api.urls),
]
