"""Reading: the overview, queue, job and scheduler pages, and the read API."""

from django.urls import path

from dashboard.browse import advice_views, api, history_views, timings_views, views
from dashboard.web.converters import API_QUEUE_ROUTE as api_queue
from dashboard.web.converters import QUEUE_ROUTE as queue

urlpatterns = [
    path("", views.overview, name="overview"),
    path("schedulers/", views.schedulers, name="schedulers"),
    path(queue, views.queue_detail, name="queue"),
    path(queue + "schedulers/", views.queue_schedulers, name="queue_schedulers"),
    path(queue + "history", history_views.queue_history, name="queue_history"),
    path(queue + "timings", timings_views.timings_table, name="queue_timings"),
    path(queue + "advice", advice_views.queue_advice, name="queue_advice"),
    path(queue + "raw/<str:field>/<path:job_id>", views.job_raw, name="job_raw"),
    path(queue + "jobs/<path:job_id>", views.job_detail, name="job"),
    path("api/v1/queues", api.queues, name="api_queues"),
    path(api_queue, api.queue, name="api_queue"),
    path(api_queue + "/timings", timings_views.timings_api, name="api_queue_timings"),
    path(api_queue + "/jobs/<path:job_id>", api.job, name="api_job"),
]
