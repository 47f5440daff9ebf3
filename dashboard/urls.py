from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

import dashboard.web.converters  # noqa: F401  (registers the <seg:…> converter for queue segments)
from dashboard.accounts import views as accounts_views
from dashboard.actions import api as actions_api
from dashboard.actions import toolbox_views
from dashboard.actions import views as actions_views
from dashboard.browse import advice_views, history_views, timings_views
from dashboard.browse import api as browse_api
from dashboard.browse import views as browse_views
from dashboard.health import metrics
from dashboard.health import views as health_views

queue = "q/<seg:connection>/<seg:prefix>/<seg:name>/"
api_queue = "api/v1/queues/<seg:connection>/<seg:prefix>/<seg:name>"

urlpatterns = [
    path("", browse_views.overview, name="overview"),
    path("login/", accounts_views.login, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("language/", accounts_views.set_language, name="set_language"),
    path("jsi18n/", accounts_views.javascript_catalog, name="javascript_catalog"),
    path("account/tokens/", accounts_views.token_list, name="tokens"),
    path("account/tokens/<int:token_id>/revoke", accounts_views.token_revoke, name="token_revoke"),
    path("schedulers/", browse_views.schedulers, name="schedulers"),
    path("health/", health_views.health_page, name="health"),
    path("metrics", metrics.metrics, name="metrics"),
    path(queue, browse_views.queue_detail, name="queue"),
    path(queue + "schedulers/", browse_views.queue_schedulers, name="queue_schedulers"),
    path(queue + "history", history_views.queue_history, name="queue_history"),
    path(queue + "timings", timings_views.timings_table, name="queue_timings"),
    path(queue + "advice", advice_views.queue_advice, name="queue_advice"),
    path(queue + "raw/<str:field>/<path:job_id>", browse_views.job_raw, name="job_raw"),
    path(queue + "jobs/<path:job_id>", browse_views.job_detail, name="job"),
    # The operator toolbox's forms (not under jobs/<id>: a job may be called "new").
    path(queue + "add-job", toolbox_views.add_job_page, name="add_job"),
    path(queue + "settings", toolbox_views.settings_page, name="queue_settings"),
    path(queue + "edit/<path:job_id>", toolbox_views.edit_retry_page, name="edit_retry"),
    path(queue + "migrate-repeat", toolbox_views.migrate_repeat_page, name="migrate_repeat"),
    path(queue + "scheduler/<path:scheduler_id>", toolbox_views.scheduler_edit_page, name="scheduler_edit"),
    path(queue + "edit-preview/<path:job_id>", toolbox_views.edit_retry_preview, name="edit_retry_preview"),
    # Acting on jobs (POST, operator role, CSRF); job ids may contain "/", so they come last.
    path(queue + "act/<str:action>/<path:job_id>", actions_views.job_action, name="job_action"),
    path(queue + "actions/<str:action>", actions_views.queue_action, name="queue_action"),
    path(queue + "bulk/preview", actions_views.bulk_preview, name="bulk_preview"),
    path(queue + "bulk/start", actions_views.bulk_start, name="bulk_start"),
    path(queue + "errors/", actions_views.queue_error_groups, name="queue_errors"),
    path(queue + "export", actions_views.queue_export, name="queue_export"),
    path("tasks/", actions_views.task_list, name="tasks"),
    path("tasks/<int:task_id>/", actions_views.task_detail, name="task"),
    path("tasks/<int:task_id>/cancel", actions_views.task_cancel, name="task_cancel"),
    path("audit/", actions_views.audit_log, name="audit"),
    path("audit.csv", actions_views.audit_csv, name="audit_csv"),
    path("api/v1/queues", browse_api.queues, name="api_queues"),
    path(api_queue, browse_api.queue, name="api_queue"),
    path(api_queue + "/timings", timings_views.timings_api, name="api_queue_timings"),
    path(api_queue + "/jobs", toolbox_views.jobs_collection, name="api_jobs"),  # GET lists, POST adds
    path(api_queue + "/job-actions/<str:action>/<path:job_id>", actions_api.job_action, name="api_job_action"),
    path(api_queue + "/actions/<str:action>", actions_api.queue_action, name="api_queue_action"),
    path(api_queue + "/bulk/preview", actions_api.bulk_preview, name="api_bulk_preview"),
    path(api_queue + "/bulk", actions_api.bulk_start, name="api_bulk_start"),
    path(api_queue + "/export", actions_api.export, name="api_export"),
    path("api/v1/tasks/<int:task_id>", actions_api.task_detail, name="api_task"),
    path("api/v1/tasks/<int:task_id>/cancel", actions_api.task_cancel, name="api_task_cancel"),
    path(api_queue + "/jobs/<path:job_id>", browse_api.job, name="api_job"),
    path("alerts/", include("dashboard.alerts.rule_urls")),
    path("alerts/channels/", include("dashboard.alerts.channel_urls")),
    path("admin/", admin.site.urls),
]

# Friendly error pages with the shell and a way back (dashboard/web/error_pages.py).
handler400 = "dashboard.web.error_pages.bad_request"
handler403 = "dashboard.web.error_pages.forbidden"
handler404 = "dashboard.web.error_pages.not_found"
handler500 = "dashboard.web.error_pages.server_error"
