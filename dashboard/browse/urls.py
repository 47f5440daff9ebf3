"""Reading: the overview, queue, job and scheduler pages, and the read API."""

from django.urls import path

from dashboard.browse import (
    advice_views,
    api,
    dedup_views,
    find_views,
    flow_views,
    history_views,
    search_views,
    timings_views,
    views,
)
from dashboard.web.converters import API_QUEUE_ROUTE as api_queue
from dashboard.web.converters import QUEUE_ROUTE as queue

urlpatterns = [
    path("", views.overview, name="overview"),
    path("schedulers/", views.schedulers, name="schedulers"),
    path("find/", find_views.find, name="find"),
    path(queue, views.queue_detail, name="queue"),
    path(queue + "schedulers/", views.queue_schedulers, name="queue_schedulers"),
    path(queue + "history", history_views.queue_history, name="queue_history"),
    path(queue + "timings", timings_views.timings_table, name="queue_timings"),
    path(queue + "advice", advice_views.queue_advice, name="queue_advice"),
    path(queue + "deduplication", dedup_views.queue_dedup, name="queue_dedup"),
    path(queue + "find", find_views.queue_find, name="queue_find"),
    path(queue + "find/background", search_views.search_start, name="search_start"),
    path("searches/", search_views.search_list, name="searches"),
    path("searches/<int:search_id>/", search_views.search_detail, name="search"),
    path("searches/<int:search_id>/cancel", search_views.search_cancel, name="search_cancel"),
    path(queue + "raw/<str:field>/<jobid:job_id>", views.job_raw, name="job_raw"),
    path(queue + "jobs/<jobid:job_id>", views.job_detail, name="job"),
    path(queue + "flow/<jobid:job_id>", flow_views.job_flow, name="job_flow"),
    path("api/v1/queues", api.queues, name="api_queues"),
    path("api/v1/find", find_views.api_find, name="api_find"),
    path(api_queue, api.queue, name="api_queue"),
    path(api_queue + "/timings", timings_views.timings_api, name="api_queue_timings"),
    path(api_queue + "/find", find_views.api_queue_find, name="api_queue_find"),
    path(api_queue + "/searches", search_views.api_search_start, name="api_search_start"),
    path("api/v1/searches", search_views.api_search_list, name="api_searches"),
    path("api/v1/searches/<int:search_id>", search_views.api_search_detail, name="api_search"),
    path("api/v1/searches/<int:search_id>/cancel", search_views.api_search_cancel, name="api_search_cancel"),
    path(api_queue + "/deduplication", dedup_views.api_queue_dedup, name="api_queue_dedup"),
    path(api_queue + "/jobs/<jobid:job_id>", api.job, name="api_job"),
    path(api_queue + "/flow/<jobid:job_id>", flow_views.api_job_flow, name="api_job_flow"),
]
