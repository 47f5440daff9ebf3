"""Roles per connection and queue-name glob (``QueueGrant``, ``dashboard.accounts.scopes``): a
tenant's team sees and acts on its own queues only — on pages, the API, exports, actions, bulk
tasks, alerts and the audit log — and a queue outside its scope answers 404, like a queue that
does not exist. Real Redis (this test's own BullMQ prefix); jobs written in BullMQ's layout."""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import re

import pytest
from django.contrib.auth.models import Group
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from dashboard.accounts.models import QueueGrant
from dashboard.accounts.scopes import glob_regex
from dashboard.actions.models import BulkTask
from dashboard.alerts.models import Alert, AlertRule, Silence
from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef
from tests.support.accounts import token_for, user_with
from tests.support.redis_db import point_at
from tests.support.seeding import seed_failed
from tests.support.servers import run_node

pytestmark = pytest.mark.django_db

A1, A2, B1 = "tenant-a-orders", "tenant-a-mail", "tenant-b-orders"


def make_queue(prefixed, name: str, *, connection: str = "default", failed: int = 2) -> QueueRef:
    """A queue as BullMQ leaves it (its meta, ``failed`` failed jobs)."""
    queue = prefixed.queue(name, connection=connection)
    prefixed.client.hset(queue.key("meta"), mapping={"opts.maxLenEvents": 10000})
    seed_failed(prefixed.client, queue, failed)
    return queue


@pytest.fixture
def tenants(prefixed_queues):
    for name in (A1, A2, B1):
        make_queue(prefixed_queues, name)
    return prefixed_queues


@pytest.fixture
def tenant_a(django_user_model):
    """An operator of tenant A's queues only (no global role group)."""
    user = django_user_model.objects.create_user("alice", password="pw")
    QueueGrant.objects.create(user=user, role="operator", queue_glob="tenant-a-*")
    return user


def api_get(client, token, url):
    return client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_overview_and_the_api_list_show_only_the_users_queues(client, tenants, tenant_a):
    client.force_login(tenant_a)
    html = client.get(reverse("overview")).content.decode()
    assert A1 in html and A2 in html
    assert B1 not in html
    listed = api_get(client, token_for(tenant_a), reverse("api_queues")).json()
    assert sorted(q["name"] for q in listed["queues"]) == [A2, A1]
    # A user with no grant keeps the global viewer role: every queue, as before.
    everyone = user_with(None, username="bob")
    listed = api_get(client, token_for(everyone), reverse("api_queues")).json()
    assert sorted(q["name"] for q in listed["queues"]) == [A2, A1, B1]


def test_another_tenants_queue_job_api_and_export_are_not_found(client, tenants, tenant_a):
    client.force_login(tenant_a)
    token = token_for(tenant_a)
    a, b = tenants.args(A1), tenants.args(B1)
    for name, args in (("queue", a), ("job", [*a, "1"]), ("queue_export", a)):
        response = client.get(reverse(name, args=args))
        assert response.status_code == 200, name
        if response.streaming:  # read to the end: an export holds a download slot until then
            assert b"".join(response.streaming_content)
    for name, args in (("api_queue", a), ("api_job", [*a, "1"]), ("api_export", a), ("api_jobs", a)):
        response = api_get(client, token, reverse(name, args=args))
        assert response.status_code == 200, name
        if response.streaming:
            assert b"".join(response.streaming_content)
    for name, args in (("queue", b), ("job", [*b, "1"]), ("queue_export", b)):
        response = client.get(reverse(name, args=args))
        assert response.status_code == 404, name
    for name, args in (("api_queue", b), ("api_job", [*b, "1"]), ("api_export", b), ("api_jobs", b)):
        response = api_get(client, token, reverse(name, args=args))
        assert response.status_code == 404, name
        assert response.json()["error"] == "not_found"
    # The answer is the one for a queue that does not exist: nothing tells them apart.
    missing = api_get(client, token, reverse("api_queue", args=tenants.args("tenant-b-nothing")))
    hidden = api_get(client, token, reverse("api_queue", args=b))
    assert missing.json() == {**hidden.json(), "message": hidden.json()["message"].replace(B1, "tenant-b-nothing")}


SAMPLE = {"job_id": "1", "field": "data", "action": "retry", "scheduler_id": "s"}


def queue_routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from queue_routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern) and "<seg:connection>" in prefix + str(p.pattern):
            yield prefix + str(p.pattern)


def test_every_queue_route_is_not_found_for_a_queue_outside_the_scope(client, tenants, tenant_a):
    """Walks the URL conf: a new queue route cannot be added that shows another team's queue."""
    client.force_login(tenant_a)
    connection, prefix, _ = tenants.args(B1)
    values = {"connection": connection, "prefix": prefix, "name": B1, **SAMPLE}
    routes = sorted(set(queue_routes(get_resolver().url_patterns)))
    assert len(routes) > 25
    for route in routes:
        url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)
        for method in (client.get, client.post):
            status = method(url).status_code
            assert status in (404, 405), f"{method.__name__.upper()} {url}: {status}"
    assert tenants.client.zcard(tenants.queue(B1).key("failed")) == 2


def test_retry_is_allowed_on_the_users_queues_and_not_found_elsewhere(client, tenants, tenant_a):
    client.force_login(tenant_a)
    a, b = tenants.args(A1), tenants.args(B1)
    done = client.post(reverse("job_action", args=[*a, "retry", "1"]))
    assert done.status_code == 200
    assert tenants.client.zscore(tenants.queue(A1).key("failed"), "1") is None
    assert client.post(reverse("job_action", args=[*b, "retry", "1"])).status_code == 404
    token = token_for(tenant_a)
    refused = client.post(reverse("api_job_action", args=[*b, "retry", "1"]), HTTP_AUTHORIZATION=f"Bearer {token}")
    assert refused.status_code == 404
    assert tenants.client.zcard(tenants.queue(B1).key("failed")) == 2  # nothing changed on B
    rows = AuditEntry.objects.filter(username="alice")
    assert rows.filter(action="job.retry", queue=A1, outcome=AuditEntry.OK).count() == 1
    assert rows.filter(action="refused.scope", outcome=AuditEntry.REFUSED).count() == 2
    assert not rows.filter(queue=B1).exists()


def test_a_viewer_grant_reads_but_does_not_act_and_a_global_role_still_applies(client, tenants, django_user_model):
    carol = django_user_model.objects.create_user("carol", password="pw")
    QueueGrant.objects.create(user=carol, role="viewer", queue_glob=A1)
    client.force_login(carol)
    assert client.get(reverse("queue", args=tenants.args(A1))).status_code == 200
    assert client.get(reverse("queue", args=tenants.args(A2))).status_code == 404
    assert client.post(reverse("job_action", args=[*tenants.args(A1), "retry", "1"])).status_code == 403
    assert tenants.client.zcard(tenants.queue(A1).key("failed")) == 2
    # Through a group, a grant raises a global viewer to operator on those queues only.
    dave = user_with("viewer", username="dave")
    dave.groups.add(Group.objects.get_or_create(name="viewer")[0])
    team = Group.objects.create(name="team-a")
    dave.groups.add(team)
    QueueGrant.objects.create(group=team, role="operator", queue_glob="tenant-a-*")
    client.force_login(dave)
    assert client.get(reverse("queue", args=tenants.args(B1))).status_code == 200  # global viewer
    assert client.post(reverse("job_action", args=[*tenants.args(B1), "retry", "1"])).status_code == 403
    assert client.post(reverse("job_action", args=[*tenants.args(A2), "retry", "1"])).status_code == 200


def test_bulk_tasks_outside_the_scope_are_refused_and_hidden(client, tenants, tenant_a):
    token = token_for(tenant_a)
    body = json.dumps({"action": "retry", "state": "failed", "reason": "x"})
    started = client.post(
        reverse("api_bulk_start", args=tenants.args(B1)),
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert started.status_code == 404
    assert not BulkTask.objects.exists()
    other = BulkTask.objects.create(
        connection="default", prefix=tenants.prefix, queue=B1, action="retry", before_ms=1, selection={}
    )
    mine = BulkTask.objects.create(
        connection="default", prefix=tenants.prefix, queue=A1, action="retry", before_ms=1, selection={}
    )
    client.force_login(tenant_a)
    html = client.get(reverse("tasks")).content.decode()
    assert reverse("task", args=[mine.pk]) in html and reverse("task", args=[other.pk]) not in html
    assert client.get(reverse("task", args=[other.pk])).status_code == 404
    assert client.post(reverse("task_cancel", args=[other.pk])).status_code == 404
    assert api_get(client, token, reverse("api_task", args=[other.pk])).status_code == 404
    other.refresh_from_db()
    assert not other.cancel_requested


def test_the_audit_log_shows_a_scoped_user_their_queues_only(client, tenants, tenant_a):
    admin = user_with("admin", username="root")
    client.force_login(admin)
    for name in (A1, B1):
        assert client.post(reverse("job_action", args=[*tenants.args(name), "retry", "2"])).status_code == 200
    client.force_login(tenant_a)
    rows = client.get(reverse("audit")).context["page"].object_list
    assert [(r.action, r.queue) for r in rows] == [("job.retry", A1)]
    response = client.get(reverse("audit_csv"))
    assert response.status_code == 200
    csv = response.getvalue().decode()
    assert A1 in csv and B1 not in csv
    client.force_login(admin)
    assert {r.queue for r in client.get(reverse("audit")).context["page"].object_list} == {A1, B1}


def open_alert(rule, queue: str, prefix: str) -> Alert:
    now = timezone.now()
    return Alert.objects.create(
        rule=rule,
        fingerprint=f"{rule.pk}-{queue}",
        connection="default",
        prefix=prefix,
        queue=queue,
        state=Alert.FIRING,
        pending_since=now,
        started_at=now,
    )


def test_alerts_and_rules_are_filtered_and_a_rule_outside_the_scope_is_refused(client, tenants, django_user_model):
    erin = django_user_model.objects.create_user("erin", password="pw")
    QueueGrant.objects.create(user=erin, role="admin", queue_glob="tenant-a-*")
    everywhere = AlertRule.objects.create(name="backlog everywhere", kind="backlog", threshold=1)
    theirs = AlertRule.objects.create(name="rule of b", kind="backlog", threshold=1, queue_glob="tenant-b-*")
    open_alert(everywhere, A1, tenants.prefix)
    open_alert(everywhere, B1, tenants.prefix)
    open_alert(theirs, B1, tenants.prefix)
    client.force_login(erin)
    history = client.get(reverse("alert_history")).context["page"].object_list
    assert [(a.rule.name, a.queue) for a in history] == [("backlog everywhere", A1)]
    rules = [r.name for r, _ in client.get(reverse("alert_rules")).context["items"]]
    assert rules == ["backlog everywhere"]
    assert client.get(reverse("alert_rule", args=[theirs.pk])).status_code == 404
    # Their admin grant lets them write rules on their queues, not on anyone else's.
    form = {"kind": "backlog", "severity": "warning", "threshold": "5", "window_minutes": "5", "min_volume": "0"}
    form |= {"for_seconds": "0", "keep_firing_seconds": "0", "repeat_minutes": "0", "enabled": "on"}
    refused = client.post(reverse("alert_rule_new"), {**form, "name": "b rule", "queue_glob": "tenant-b-*"})
    assert refused.status_code == 200 and not AlertRule.objects.filter(name="b rule").exists()
    assert not AlertRule.objects.filter(name="any rule").exists()
    client.post(reverse("alert_rule_new"), {**form, "name": "any rule", "queue_glob": ""})
    assert not AlertRule.objects.filter(name="any rule").exists()
    saved = client.post(reverse("alert_rule_new"), {**form, "name": "a rule", "queue_glob": "tenant-a-*"})
    assert saved.status_code == 302 and AlertRule.objects.filter(name="a rule").exists()
    assert client.post(reverse("alert_rule_edit", args=[everywhere.pk]), form).status_code == 403
    # Silences: those on their queues only.
    later = timezone.now() + dt.timedelta(hours=1)
    for glob in ("tenant-a-orders", "tenant-b-*"):
        Silence.objects.create(queue_glob=glob, ends_at=later, author="ops", comment=f"quiet {glob}")
    html = client.get(reverse("silences")).content.decode()
    assert "quiet tenant-a-orders" in html and "quiet tenant-b-*" not in html


def test_a_per_connection_grant(client, tenants, settings, django_user_model):
    point_at(settings, tenants.spec("default"), tenants.spec("other"))
    make_queue(tenants, "shared-q", connection="other")
    frank = django_user_model.objects.create_user("frank", password="pw")
    QueueGrant.objects.create(user=frank, role="viewer", connection="other")
    client.force_login(frank)
    html = client.get(reverse("overview")).content.decode()
    # The same Redis and prefix under two connection names: only "other"'s rows are theirs.
    assert reverse("queue", args=tenants.args(A1, connection="other")) in html
    assert reverse("queue", args=tenants.args(A1)) not in html
    assert client.get(reverse("queue", args=tenants.args(A1, connection="other"))).status_code == 200
    assert client.get(reverse("queue", args=tenants.args(A1))).status_code == 404


def test_health_and_metrics_need_a_global_role(client, tenants, tenant_a):
    client.force_login(tenant_a)
    assert client.get(reverse("health")).status_code == 403
    refused = client.get(reverse("metrics"))
    assert refused.status_code == 403 and b"global role" in refused.content
    # A user without grants passes the check (whether the dashboard Redis then answers or not).
    client.force_login(user_with(None, username="bob"))
    assert client.get(reverse("metrics")).status_code != 403
    assert client.get(reverse("health")).status_code == 200


@pytest.mark.parametrize(
    "glob",
    ["tenant-a-*", "tenant-?-orders", "*orders", "t[ae]nant-a-*", "t[!e]nant-*", "a.b*", "x(y)+*", "100%_*"],
)
def test_the_database_filter_matches_what_fnmatchcase_matches(glob):
    names = [A1, A2, B1, "tenant-a", "tanant-a-x", "a.b.c", "axb", "x(y)+z", "xyy+z", "100%_done", "100x_y"]
    for name in names:
        AuditEntry.objects.create(username="x", via="page", action="retry", connection="c", prefix="p", queue=name)
    found = set(AuditEntry.objects.filter(queue__regex=glob_regex(glob)).values_list("queue", flat=True))
    assert found == {n for n in names if fnmatch.fnmatchcase(n, glob)}


def test_a_redrive_into_another_teams_queue_is_refused(client, tenants, tenant_a, settings):
    settings.QUEUEWATCH_DLQ_MAP = {"tenant-a-dlq": B1}
    dlq = make_queue(tenants, "tenant-a-dlq")
    client.force_login(tenant_a)
    refused = client.post(reverse("job_action", args=[*tenants.args("tenant-a-dlq"), "redrive", "1"]), {"reason": "x"})
    assert refused.status_code == 403 and "outside your scope" in refused.content.decode()
    body = json.dumps({"action": "redrive", "state": "failed", "reason": "x"})
    started = client.post(
        reverse("api_bulk_start", args=tenants.args("tenant-a-dlq")),
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token_for(tenant_a)}",
    )
    assert started.status_code == 403 and not BulkTask.objects.exists()
    assert tenants.client.zcard(dlq.key("failed")) == 2 and tenants.client.zcard(tenants.queue(B1).key("wait")) == 0
    assert AuditEntry.objects.filter(username="alice", action="refused.scope").count() == 2


def test_a_scoped_user_sees_no_health_link_or_summary(client, tenants, tenant_a):
    client.force_login(tenant_a)
    assert reverse("health") not in client.get(reverse("overview")).content.decode()
    client.force_login(user_with(None, username="bob"))
    assert reverse("health") in client.get(reverse("overview")).content.decode()


@pytest.mark.node
def test_the_schedulers_page_lists_the_users_queues_only(client, tenants, tenant_a):
    for name in (A1, B1):  # real Node BullMQ job schedulers
        repeat, template = json.dumps({"every": 60_000}), json.dumps({"name": "report", "data": {}})
        run_node("toolbox.mjs", "schedule", tenants.url, name, f"s-{name}", repeat, template, prefix=tenants.prefix)
    client.force_login(tenant_a)
    assert [queue.name for queue, *_ in client.get(reverse("schedulers")).context["groups"]] == [A1]
    client.force_login(user_with(None, username="bob"))
    assert sorted(queue.name for queue, *_ in client.get(reverse("schedulers")).context["groups"]) == [A1, B1]


def test_grants_are_edited_in_the_django_admin_and_audited(client, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="pw")
    team = Group.objects.create(name="team-a")
    client.force_login(root)
    assert client.get(reverse("admin:dashboard_queuegrant_changelist")).status_code == 200
    added = client.post(
        reverse("admin:dashboard_queuegrant_add"),
        {"group": team.pk, "role": "operator", "connection": "", "queue_glob": "tenant-a-*"},
    )
    assert added.status_code == 302
    assert QueueGrant.objects.get().queue_glob == "tenant-a-*"
    assert AuditEntry.objects.filter(action="admin.add", via="admin").exists()
    # A grant is for a user or a group, not both and not neither.
    both = client.post(
        reverse("admin:dashboard_queuegrant_add"),
        {"user": root.pk, "group": team.pk, "role": "viewer", "connection": "", "queue_glob": ""},
    )
    assert both.status_code == 200 and QueueGrant.objects.count() == 1
    assert "choose one of the two" in both.content.decode()


def test_the_grant_role_command_grants_lists_and_removes(client, tenants):
    from io import StringIO

    from django.core.management import call_command

    user_with(None, username="hana")
    out = StringIO()
    call_command("grant_role", "hana", "operator", "--queue", "tenant-a-*", stdout=out)
    assert "granted: hana: operator on */tenant-a-*" in out.getvalue()
    assert AuditEntry.objects.filter(action="user.grant", via="cli").count() == 1
    hana = QueueGrant.objects.get().user
    client.force_login(hana)
    assert client.get(reverse("queue", args=tenants.args(B1))).status_code == 404
    listed = StringIO()
    call_command("grant_role", "--list", stdout=listed)
    assert listed.getvalue().strip() == "hana: operator on */tenant-a-*"
    call_command("grant_role", "hana", "operator", "--queue", "tenant-a-*", "--remove", stdout=StringIO())
    assert not QueueGrant.objects.exists()
    client.force_login(hana)  # no grant left: a viewer of every queue again
    assert client.get(reverse("queue", args=tenants.args(B1))).status_code == 200
