"""Acting on queues and jobs: the toolbox's forms, actions, bulk tasks, export, the audit log's
pages, and their API."""

from django.urls import path

from dashboard.actions import api, views
from dashboard.actions.toolbox import scheduler_views
from dashboard.actions.toolbox import views as toolbox_views
from dashboard.web.converters import API_QUEUE_ROUTE as api_queue
from dashboard.web.converters import QUEUE_ROUTE as queue

urlpatterns = [
    # The operator toolbox's forms (not under jobs/<id>: a job may be called "new").
    path(queue + "add-job", toolbox_views.add_job_page, name="add_job"),
    path(queue + "settings", toolbox_views.settings_page, name="queue_settings"),
    path(queue + "edit/<jobid:job_id>", toolbox_views.edit_retry_page, name="edit_retry"),
    path(queue + "migrate-repeat", toolbox_views.migrate_repeat_page, name="migrate_repeat"),
    path(queue + "schedulers/<path:scheduler_id>", scheduler_views.scheduler_page, name="scheduler_detail"),
    path(queue + "new-scheduler", scheduler_views.scheduler_create_page, name="scheduler_create"),
    path(queue + "scheduler-preview", scheduler_views.scheduler_preview, name="scheduler_preview"),
    path(queue + "scheduler/<path:scheduler_id>", toolbox_views.scheduler_edit_page, name="scheduler_edit"),
    path(queue + "edit-preview/<jobid:job_id>", toolbox_views.edit_retry_preview, name="edit_retry_preview"),
    # Acting on jobs (POST, operator role, CSRF); job ids may contain "/", so they come last.
    path(queue + "act/<str:action>/<jobid:job_id>", views.job_action, name="job_action"),
    path(queue + "actions/<str:action>", views.queue_action, name="queue_action"),
    path(queue + "bulk/preview", views.bulk_preview, name="bulk_preview"),
    path(queue + "bulk/confirm-envelope", views.dlq_envelope_confirm, name="dlq_envelope_confirm"),
    path(queue + "bulk/start", views.bulk_start, name="bulk_start"),
    path(queue + "errors/", views.queue_error_groups, name="queue_errors"),
    path(queue + "export", views.queue_export, name="queue_export"),
    path("tasks/", views.task_list, name="tasks"),
    path("tasks/<int:task_id>/", views.task_detail, name="task"),
    path("tasks/<int:task_id>/cancel", views.task_cancel, name="task_cancel"),
    path("audit/", views.audit_log, name="audit"),
    path("audit.csv", views.audit_csv, name="audit_csv"),
    path(api_queue + "/jobs", toolbox_views.jobs_collection, name="api_jobs"),  # GET lists, POST adds
    path(
        api_queue + "/schedulers/<path:scheduler_id>", scheduler_views.scheduler_api, name="api_scheduler"
    ),  # GET lists, POST adds
    path(api_queue + "/job-actions/<str:action>/<jobid:job_id>", api.job_action, name="api_job_action"),
    path(api_queue + "/actions/<str:action>", api.queue_action, name="api_queue_action"),
    path(api_queue + "/bulk/preview", api.bulk_preview, name="api_bulk_preview"),
    path(api_queue + "/bulk", api.bulk_start, name="api_bulk_start"),
    path(api_queue + "/export", api.export, name="api_export"),
    path("api/v1/tasks/<int:task_id>", api.task_detail, name="api_task"),
    path("api/v1/tasks/<int:task_id>/cancel", api.task_cancel, name="api_task_cancel"),
]
