from django.contrib import admin
from django.urls import include, path

from eco_service.ops_api import api as ops_api

# The admin names the service, not Django; it has no public site to "view" (/ is not served).
admin.site.site_header = "eco-mcp administration"
admin.site.site_title = "eco-mcp admin"
admin.site.index_title = "NEON catalogs, refreshes and schedules"
admin.site.site_url = None
# The navigation sidebar repeats the index's model list and took 300 px from every list page:
# the refresh log and the catalog states need the width for their errors and addresses.
admin.site.enable_nav_sidebar = False

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/ops/", ops_api.urls),
    # The dataset store's pages, for staff (eco_service/dataset_pages.py).
    path("datasets/", include("eco_service.dataset_pages")),
]
