"""Every route's name and path, as they were before each feature got its own urls.py: the root
URLconf only includes the features' patterns, so links, bookmarks and API clients keep working.
A path that changes must change here too, on purpose."""

from __future__ import annotations

import pytest
from django.urls import resolve, reverse

ROUTES = [
    ("add_job", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/add-job"),
    ("alert_history", {}, "/alerts/"),
    ("alert_rule", {"rule_id": 4}, "/alerts/rules/4/"),
    ("alert_rule_delete", {"rule_id": 4}, "/alerts/rules/4/delete"),
    ("alert_rule_edit", {"rule_id": 4}, "/alerts/rules/4/edit"),
    ("alert_rule_fields", {}, "/alerts/rules/fields"),
    ("alert_rule_new", {}, "/alerts/rules/new"),
    ("alert_rules", {}, "/alerts/rules/"),
    (
        "api_bulk_preview",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/bulk/preview",
    ),
    (
        "api_bulk_start",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/bulk",
    ),
    (
        "api_export",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/export",
    ),
    (
        "api_job",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/api/v1/queues/local/bull/emails/jobs/12/a",
    ),
    (
        "api_job_flow",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/api/v1/queues/local/bull/emails/flow/12/a",
    ),
    (
        "api_job_action",
        {"connection": "local", "prefix": "bull", "name": "emails", "action": "retry", "job_id": "12/a"},
        "/api/v1/queues/local/bull/emails/job-actions/retry/12/a",
    ),
    ("api_jobs", {"connection": "local", "prefix": "bull", "name": "emails"}, "/api/v1/queues/local/bull/emails/jobs"),
    ("api_queue", {"connection": "local", "prefix": "bull", "name": "emails"}, "/api/v1/queues/local/bull/emails"),
    (
        "api_queue_action",
        {"connection": "local", "prefix": "bull", "name": "emails", "action": "retry"},
        "/api/v1/queues/local/bull/emails/actions/retry",
    ),
    (
        "api_queue_dedup",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/deduplication",
    ),
    (
        "api_queue_timings",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/timings",
    ),
    ("api_queues", {}, "/api/v1/queues"),
    ("api_find", {}, "/api/v1/find"),
    (
        "api_queue_find",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/find",
    ),
    (
        "api_search_start",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/api/v1/queues/local/bull/emails/searches",
    ),
    ("api_searches", {}, "/api/v1/searches"),
    ("api_search", {"search_id": 8}, "/api/v1/searches/8"),
    ("api_search_cancel", {"search_id": 8}, "/api/v1/searches/8/cancel"),
    ("find", {}, "/find/"),
    ("queue_find", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/find"),
    ("api_task", {"task_id": 7}, "/api/v1/tasks/7"),
    ("api_task_cancel", {"task_id": 7}, "/api/v1/tasks/7/cancel"),
    ("audit", {}, "/audit/"),
    ("audit_csv", {}, "/audit.csv"),
    ("bulk_preview", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/bulk/preview"),
    ("bulk_start", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/bulk/start"),
    (
        "dlq_envelope_confirm",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/bulk/confirm-envelope",
    ),
    ("channel_delete", {"channel_id": 8}, "/alerts/channels/8/delete/"),
    ("channel_edit", {"channel_id": 8}, "/alerts/channels/8/edit/"),
    ("channel_log", {"channel_id": 8}, "/alerts/channels/8/log/"),
    ("channel_new", {}, "/alerts/channels/new/"),
    ("channel_test", {"channel_id": 8}, "/alerts/channels/8/test/"),
    ("channels", {}, "/alerts/channels/"),
    ("cron_preview", {}, "/alerts/cron-preview"),
    (
        "edit_retry",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/q/local/bull/emails/edit/12/a",
    ),
    (
        "edit_retry_preview",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/q/local/bull/emails/edit-preview/12/a",
    ),
    ("health", {}, "/health/"),
    ("javascript_catalog", {}, "/jsi18n/"),
    (
        "job",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/q/local/bull/emails/jobs/12/a",
    ),
    (
        "job_action",
        {"connection": "local", "prefix": "bull", "name": "emails", "action": "retry", "job_id": "12/a"},
        "/q/local/bull/emails/act/retry/12/a",
    ),
    (
        "job_flow",
        {"connection": "local", "prefix": "bull", "name": "emails", "job_id": "12/a"},
        "/q/local/bull/emails/flow/12/a",
    ),
    (
        "job_raw",
        {"connection": "local", "prefix": "bull", "name": "emails", "field": "data", "job_id": "12/a"},
        "/q/local/bull/emails/raw/data/12/a",
    ),
    ("login", {}, "/login/"),
    ("logout", {}, "/logout/"),
    ("metrics", {}, "/metrics"),
    (
        "migrate_repeat",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/migrate-repeat",
    ),
    ("overview", {}, "/"),
    ("queue", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/"),
    (
        "queue_action",
        {"connection": "local", "prefix": "bull", "name": "emails", "action": "retry"},
        "/q/local/bull/emails/actions/retry",
    ),
    ("queue_advice", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/advice"),
    (
        "queue_dedup",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/deduplication",
    ),
    ("queue_errors", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/errors/"),
    ("queue_export", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/export"),
    ("queue_history", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/history"),
    (
        "queue_schedulers",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/schedulers/",
    ),
    ("queue_settings", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/settings"),
    ("queue_timings", {"connection": "local", "prefix": "bull", "name": "emails"}, "/q/local/bull/emails/timings"),
    (
        "api_scheduler",
        {"connection": "local", "prefix": "bull", "name": "emails", "scheduler_id": "s/1"},
        "/api/v1/queues/local/bull/emails/schedulers/s/1",
    ),
    (
        "scheduler_create",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/new-scheduler",
    ),
    (
        "scheduler_detail",
        {"connection": "local", "prefix": "bull", "name": "emails", "scheduler_id": "s 1"},
        "/q/local/bull/emails/schedulers/s%201",
    ),
    (
        "scheduler_preview",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/scheduler-preview",
    ),
    (
        "scheduler_edit",
        {"connection": "local", "prefix": "bull", "name": "emails", "scheduler_id": "s 1"},
        "/q/local/bull/emails/scheduler/s%201",
    ),
    ("schedulers", {}, "/schedulers/"),
    ("search", {"search_id": 8}, "/searches/8/"),
    ("search_cancel", {"search_id": 8}, "/searches/8/cancel"),
    (
        "search_start",
        {"connection": "local", "prefix": "bull", "name": "emails"},
        "/q/local/bull/emails/find/background",
    ),
    ("searches", {}, "/searches/"),
    ("set_language", {}, "/language/"),
    ("silence_expire", {"silence_id": 5}, "/alerts/silences/5/expire"),
    ("silence_new", {}, "/alerts/silences/new"),
    ("silences", {}, "/alerts/silences/"),
    ("task", {"task_id": 7}, "/tasks/7/"),
    ("task_cancel", {"task_id": 7}, "/tasks/7/cancel"),
    ("tasks", {}, "/tasks/"),
    ("token_revoke", {"token_id": 3}, "/account/tokens/3/revoke"),
    ("tokens", {}, "/account/tokens/"),
    ("window_delete", {"window_id": 6}, "/alerts/windows/6/delete"),
    ("window_new", {}, "/alerts/windows/new"),
]


@pytest.mark.parametrize(("name", "kwargs", "path"), ROUTES, ids=[r[0] for r in ROUTES])
def test_route_keeps_its_name_and_path(name, kwargs, path):
    assert reverse(name, kwargs=kwargs) == path
    assert resolve(path).url_name == name


def test_the_table_lists_every_named_route():
    from django.urls import get_resolver

    names = {k for k in get_resolver().reverse_dict if isinstance(k, str)}
    assert names == {r[0] for r in ROUTES}
