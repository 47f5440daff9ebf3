"""Every action endpoint, page and API: anonymous → login / 401, viewer → 403, operator →
allowed (and audited with the right fields), CSRF enforced on cookie-authenticated posts,
read-only mode refuses everything. The endpoint table is checked against the URL conf, so a
new action URL cannot be added without being covered here."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import get_resolver, reverse

from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry
from tests.support.accounts import token_for, user_with
from tests.support.servers import run_node

pytestmark = [pytest.mark.django_db, pytest.mark.node]

Q = ("default", "bull", "perm")


@pytest.fixture
def seeded(actions_redis):
    return run_node("seed_actions.mjs", actions_redis, "perm", "6", "3", "3")


def endpoints(ids: dict, task_id: int | None) -> list[tuple[str, str, list, dict, str | None]]:
    """(kind, url name, args, body, audited action) for every action endpoint, in an order
    where each operator call finds what it needs (a fresh job, no running task…)."""
    f, d, dlq = ids["failed"], ids["delayed"], ids["dlq"]
    dlq_q = (Q[0], Q[1], "perm-dlq")
    bulk = {"action": "retry", "state": "failed", "scope": "matching", "reason": "bad deploy", "rate": "50"}
    rows = []
    for kind, prefix, i in (("page", "", 0), ("api", "api_", 1)):
        rows += [
            (kind, prefix + "job_action", [*Q, "retry", f[i]], {}, "job.retry"),
            (kind, prefix + "job_action", [*Q, "discard", f[2 + i]], {"reason": "junk"}, "job.discard"),
            (kind, prefix + "job_action", [*Q, "promote", d[i]], {}, "job.promote"),
            (kind, prefix + "job_action", [*dlq_q, "redrive", dlq[i]], {"reason": "fixed"}, "job.redrive"),
            (kind, prefix + "queue_action", [*Q, "pause"], {"reason": "maintenance"}, "queue.pause"),
            (kind, prefix + "queue_action", [*Q, "resume"], {}, "queue.resume"),
            (
                kind,
                prefix + "queue_action",
                [*Q, "clean"],
                {"state": "completed", "older_than_minutes": "60", "reason": "tidy"},
                "queue.clean",
            ),
            (kind, prefix + "bulk_preview", [*Q], {"action": "retry", "state": "failed", "scope": "matching"}, None),
            (kind, prefix + "bulk_start", [*Q], bulk, "bulk.retry"),
            (kind, prefix + "task_cancel", ["TASK"], {}, "bulk.cancel"),
        ]
    # The toolbox's own endpoints (its actions share the URLs above; tests/actions/test_toolbox_pages.py
    # covers them and their admin-only ones).
    rows += [
        ("api", "api_jobs", [*Q], {"name": "added", "data": {"a": 1}}, "queue.add"),
        ("page", "edit_retry_preview", [*Q, f[4]], {"patch": '{"fixed": true}'}, None),
    ]
    # Admin only (an operator gets 403 too; tests/actions/test_dead_letter_envelopes.py: an admin).
    envelope = {"action": "redrive", "state": "waiting", "scope": "matching", "data_field": "data"}
    rows += [("page", "dlq_envelope_confirm", [*dlq_q], envelope, "queue.set-dlq-envelope")]
    return rows


ADMIN_ONLY = {"dlq_envelope_confirm"}


ACTION_MODULES = ("dashboard.actions.views", "dashboard.actions.api", "dashboard.actions.toolbox.views")
READ_ONLY_VIEWS = {
    "task_list",
    "task_detail",
    "queue_error_groups",
    "queue_export",
    "audit_log",
    "audit_csv",
    "export",
    "add_job_page",
    "edit_retry_page",
    "settings_page",
    "scheduler_edit_page",
    "migrate_repeat_page",
}


def every_route(patterns):
    """The routes of a URLconf, those of included URLconfs too (each feature has its own)."""
    for p in patterns:
        if hasattr(p, "url_patterns"):
            yield from every_route(p.url_patterns)
        else:
            yield p


def test_the_table_covers_every_action_url():
    names = set()
    for p in every_route(get_resolver().url_patterns):
        callback = getattr(p, "callback", None)
        if callback is not None and callback.__module__ in ACTION_MODULES and callback.__name__ not in READ_ONLY_VIEWS:
            names.add(p.name)
    covered = {name for _, name, *_ in endpoints({"failed": ["1"] * 6, "delayed": ["1"] * 3, "dlq": ["1"] * 3}, None)}
    assert names == covered


def call(client: Client, kind: str, name: str, args: list, body: dict, *, token: str | None = None, task_id=None):
    args = [task_id if a == "TASK" else a for a in args]
    url = reverse(name, args=args)
    if kind == "api":
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        return client.post(url, json.dumps(body), content_type="application/json", **headers)
    return client.post(url, body, HTTP_HX_REQUEST="true")


def some_task() -> int:
    return BulkTask.objects.create(
        action="retry", connection=Q[0], prefix=Q[1], queue="other", before_ms=0, reason="r"
    ).pk


def test_anonymous_gets_login_redirect_or_401(client, seeded):
    task_id = some_task()
    for kind, name, args, body, _ in endpoints(seeded, task_id):
        r = call(client, kind, name, args, body, task_id=task_id)
        if kind == "api":
            assert r.status_code == 401 and r.json()["error"] == "unauthorized", name
        else:
            assert r.status_code == 302 and "/login/" in r["Location"], name
    assert not AuditEntry.objects.exclude(queue="").exists()  # no queue action (refusals are recorded as events)


def test_viewer_is_refused_with_403(client, seeded):
    viewer = user_with("viewer")
    client.force_login(viewer)
    token = token_for(viewer)
    task_id = some_task()
    for kind, name, args, body, _ in endpoints(seeded, task_id):
        r = call(client, kind, name, args, body, token=token, task_id=task_id)
        assert r.status_code == 403, (kind, name, r.status_code)
        if kind == "api":
            assert r.json()["error"] == "forbidden"
    assert not AuditEntry.objects.exclude(queue="").exists()  # no queue action (refusals are recorded as events)
    assert BulkTask.objects.get(pk=task_id).state == BulkTask.PENDING


def test_read_only_mode_refuses_even_an_admin(client, seeded, settings):
    settings.QUEUEWATCH_READ_ONLY = True
    admin = User.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    token = token_for(admin)
    task_id = some_task()
    for kind, name, args, body, _ in endpoints(seeded, task_id):
        if name.endswith("task_cancel"):
            continue  # allowed: read-only mode is an emergency brake (tests/security/test_read_only_brake.py)
        r = call(client, kind, name, args, body, token=token, task_id=task_id)
        assert r.status_code == 403, (kind, name)
    assert not AuditEntry.objects.exclude(queue="").exists()  # no queue action (refusals are recorded as events)


def test_csrf_is_enforced_on_cookie_authenticated_posts(seeded):
    operator = user_with("operator")
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(operator)
    task_id = some_task()
    for kind, name, args, body, _ in endpoints(seeded, task_id):
        r = call(csrf_client, kind, name, args, body, task_id=task_id)  # session cookie, no token
        assert r.status_code == 403, (kind, name)
    assert not AuditEntry.objects.exclude(queue="").exists()  # no queue action (refusals are recorded as events)


def test_operator_is_allowed_and_every_mutation_is_audited(client, seeded):
    operator = user_with("operator")
    client.force_login(operator)
    token = token_for(operator)
    task_id = None
    for kind, name, args, body, audited in endpoints(seeded, None):
        before = AuditEntry.objects.count()
        r = call(client, kind, name, args, body, token=token, task_id=task_id)
        if name in ADMIN_ONLY:
            assert r.status_code == 403 and not AuditEntry.objects.filter(action=audited).exists(), name
            continue
        assert r.status_code in (200, 201, 202), (kind, name, r.status_code, r.content[:300])
        if kind == "page":
            assert b'class="action-result refused"' not in r.content, (name, r.content[:300])
        if name.endswith("bulk_start"):
            task_id = BulkTask.objects.latest("pk").pk
        if audited is None:
            assert AuditEntry.objects.count() == before, name  # a preview changes nothing
            continue
        entry = AuditEntry.objects.latest("pk")
        assert AuditEntry.objects.count() == before + 1, name
        assert (entry.action, entry.via, entry.username, entry.user) == (audited, kind, "user-operator", operator)
        assert entry.outcome in (AuditEntry.OK, AuditEntry.STARTED), (name, entry.message)
        assert entry.connection == "default" and entry.prefix == "bull"
        if body.get("reason"):
            assert entry.reason == body["reason"]
        if audited.startswith("job."):
            assert entry.job_ids == [args[-1]] and entry.affected == 1
        if audited == "bulk.retry":
            assert entry.selection["state"] == "failed" and entry.selection["before_ms"] > 0
            assert entry.task_id == task_id and entry.reason == "bad deploy"
    # The redrive landed in the source queue; the retried job is waiting again.
    assert AuditEntry.objects.filter(action="job.redrive", queue="perm-dlq").count() == 2
    assert AuditEntry.objects.filter(action="bulk.cancel").count() == 2
