"""The health page and /metrics."""

from django.urls import path

from dashboard.health import metrics, views

urlpatterns = [
    path("health/", views.health_page, name="health"),
    path("metrics", metrics.metrics, name="metrics"),
]
