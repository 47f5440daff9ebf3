"""The root URLconf: each feature's routes (its urls.py), the admin and the error pages. Paths
and names are each feature's; the order here does not decide any match (no two features' routes
overlap)."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("dashboard.browse.urls")),
    path("", include("dashboard.accounts.urls")),
    path("", include("dashboard.health.urls")),
    path("", include("dashboard.actions.urls")),
    path("alerts/", include("dashboard.alerts.urls")),
    path("admin/", admin.site.urls),
]

# Friendly error pages with the shell and a way back (dashboard/web/error_pages.py).
handler400 = "dashboard.web.error_pages.bad_request"
handler403 = "dashboard.web.error_pages.forbidden"
handler404 = "dashboard.web.error_pages.not_found"
handler500 = "dashboard.web.error_pages.server_error"
