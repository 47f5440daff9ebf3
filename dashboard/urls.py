from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import api, views
from dashboard import views_history
from dashboard import metrics, views_health

queue = "q/<str:connection>/<str:prefix>/<str:name>/"
api_queue = "api/v1/queues/<str:connection>/<str:prefix>/<str:name>"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("login/", views.login, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("schedulers/", views.schedulers, name="schedulers"),
    path("health/", views_health.health_page, name="health"),
    path("metrics", metrics.metrics, name="metrics"),
    path(queue, views.queue_detail, name="queue"),
    path(queue + "schedulers/", views.queue_schedulers, name="queue_schedulers"),
    path(queue + "history", views_history.queue_history, name="queue_history"),
    path(queue + "raw/<str:field>/<path:job_id>", views.job_raw, name="job_raw"),
    path(queue + "jobs/<path:job_id>", views.job_detail, name="job"),
    path("api/v1/queues", api.queues, name="api_queues"),
    path(api_queue, api.queue, name="api_queue"),
    path(api_queue + "/jobs", api.jobs, name="api_jobs"),
    path(api_queue + "/jobs/<path:job_id>", api.job, name="api_job"),
    path("alerts/", include("dashboard.alerts.rule_urls")),
    path("admin/", admin.site.urls),
]
