from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import api, views
from dashboard import views_history
from dashboard import metrics, views_health
from dashboard import api_actions, views_actions

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
    # Acting on jobs (POST, operator role, CSRF); job ids may contain "/", so they come last.
    path(queue + "act/<str:action>/<path:job_id>", views_actions.job_action, name="job_action"),
    path(queue + "actions/<str:action>", views_actions.queue_action, name="queue_action"),
    path(queue + "bulk/preview", views_actions.bulk_preview, name="bulk_preview"),
    path(queue + "bulk/start", views_actions.bulk_start, name="bulk_start"),
    path(queue + "errors/", views_actions.queue_error_groups, name="queue_errors"),
    path(queue + "export", views_actions.queue_export, name="queue_export"),
    path("tasks/", views_actions.task_list, name="tasks"),
    path("tasks/<int:task_id>/", views_actions.task_detail, name="task"),
    path("tasks/<int:task_id>/cancel", views_actions.task_cancel, name="task_cancel"),
    path("audit/", views_actions.audit_log, name="audit"),
    path("audit.csv", views_actions.audit_csv, name="audit_csv"),
    path("api/v1/queues", api.queues, name="api_queues"),
    path(api_queue, api.queue, name="api_queue"),
    path(api_queue + "/jobs", api.jobs, name="api_jobs"),
    path(api_queue + "/job-actions/<str:action>/<path:job_id>", api_actions.job_action, name="api_job_action"),
    path(api_queue + "/actions/<str:action>", api_actions.queue_action, name="api_queue_action"),
    path(api_queue + "/bulk/preview", api_actions.bulk_preview, name="api_bulk_preview"),
    path(api_queue + "/bulk", api_actions.bulk_start, name="api_bulk_start"),
    path(api_queue + "/export", api_actions.export, name="api_export"),
    path("api/v1/tasks/<int:task_id>", api_actions.task_detail, name="api_task"),
    path("api/v1/tasks/<int:task_id>/cancel", api_actions.task_cancel, name="api_task_cancel"),
    path(api_queue + "/jobs/<path:job_id>", api.job, name="api_job"),
    path("alerts/", include("dashboard.alerts.rule_urls")),
    path("alerts/channels/", include("dashboard.alerts.channel_urls")),
    path("admin/", admin.site.urls),
]
