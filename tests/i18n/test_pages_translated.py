"""Every page of the URL conf, rendered in English and in Arabic: the Arabic page carries
``lang="ar" dir="rtl"`` and shows no English text the catalog has a translation for (a string
marked but shown untranslated, or shown from an untranslated code path). Walks the resolver, so
a new page is checked the day it is added (or must say here why it is not a page)."""

from __future__ import annotations

import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from dashboard.accounts.models import ApiToken
from dashboard.actions.models import BulkTask
from dashboard.alerts.models import Alert, AlertRule, Channel, MaintenanceWindow, Silence
from dashboard.audit.models import AuditEntry
from dashboard.browse.models import SearchTask

pytestmark = pytest.mark.django_db

CATALOG = Path(__file__).resolve().parents[2] / "locale" / "ar" / "LC_MESSAGES" / "django.po"
NOW_MS = int(time.time() * 1000)

# Routes that are not HTML pages, with why.
NOT_PAGES = {
    "logout": "POST only",
    "set_language": "POST only",
    "javascript_catalog": "JavaScript",
    "metrics": "Prometheus text",
    "audit_csv": "CSV download",
    "queue_export": "download",
    "job_raw": "JSON download",
    "queue_history": "JSON for the charts",
    "job_action": "POST only",
    "queue_action": "POST only",
    "bulk_preview": "POST only",
    "bulk_start": "POST only",
    "dlq_envelope_confirm": "POST only",
    "task_cancel": "POST only",
    "search_start": "POST only",
    "search_cancel": "POST only",
    "alert_rule_delete": "POST only",
    "silence_new": "POST only",
    "silence_expire": "POST only",
    "window_new": "POST only",
    "window_delete": "POST only",
    "channel_test": "POST only",
    "token_revoke": "POST only",
    "edit_retry_preview": "POST only",
}


def seed_queue(r, prefix: str):
    """A queue with a waiting and a failed job (hand-written in BullMQ's layout), and a DLQ."""
    for name in ("orders", "orders-dlq"):
        r.hset(f"{prefix}:{name}:meta", mapping={"opts.maxLenEvents": 10000})
    r.hset(
        f"{prefix}:orders:1",
        mapping={
            "name": "إرسال الفاتورة",
            "data": json.dumps({"customer": "سارة", "total": 12}),
            "opts": '{"attempts":3}',
            "timestamp": NOW_MS - 60000,
        },
    )
    r.rpush(f"{prefix}:orders:wait", "1")
    r.hset(
        f"{prefix}:orders:2",
        mapping={
            "name": "charge",
            "data": "{}",
            "opts": "{}",
            "timestamp": NOW_MS - 50000,
            "processedOn": NOW_MS - 40000,
            "finishedOn": NOW_MS - 30000,
            "atm": 3,
            "failedReason": "Error: card declined",
            "stacktrace": json.dumps(["Error: card declined\n    at charge"]),
        },
    )
    r.zadd(f"{prefix}:orders:failed", {"2": NOW_MS - 30000})
    # A job scheduler with its pending iteration (the scheduler, edit and preview pages).
    due = (NOW_MS // 86_400_000 + 1) * 86_400_000
    r.zadd(f"{prefix}:orders:repeat", {"nightly": due})
    r.hset(
        f"{prefix}:orders:repeat:nightly",
        mapping={"name": "report", "pattern": "0 0 * * *", "tz": "UTC", "ic": 1, "data": "{}", "opts": "{}"},
    )
    r.hset(f"{prefix}:orders:repeat:nightly:{due}", mapping={"name": "report", "data": "{}", "opts": "{}"})
    r.zadd(f"{prefix}:orders:delayed", {f"repeat:nightly:{due}": due * 0x1000})


@pytest.fixture
def site(prefixed_queues, django_user_model):
    prefix = prefixed_queues.prefix
    seed_queue(prefixed_queues.client, prefix)
    admin = django_user_model.objects.create_superuser("admin", password="admin-pass")
    channel = Channel.objects.create(name="on-call", kind=Channel.EMAIL, config={"to": ["oncall@example.test"]})
    rule = AlertRule.objects.create(name="orders backlog", kind="backlog", threshold=10)
    rule.channels.add(channel)
    Alert.objects.create(
        rule=rule,
        fingerprint="fp",
        connection="default",
        prefix=prefix,
        queue="orders",
        state=Alert.FIRING,
        pending_since=timezone.now(),
        started_at=timezone.now(),
        summary="",
    )
    Silence.objects.create(rule=rule, ends_at=timezone.now() + timezone.timedelta(hours=1), author="admin", comment="")
    MaintenanceWindow.objects.create(name="deploy", cron="0 2 * * 0", duration_minutes=30, author="admin", comment="")
    task = BulkTask.objects.create(
        created_by=admin,
        action="retry",
        connection="default",
        prefix=prefix,
        queue="orders",
        selection={"state": "failed"},
        before_ms=NOW_MS,
        reason="",
    )
    search = SearchTask.objects.create(
        created_by=admin,
        connection="default",
        prefix=prefix,
        queue="orders",
        job_state="failed",
        where="customer = x",
        state=SearchTask.DONE,
        examined=1,
        in_state=1,
        steps=1,
        matches=[{"id": "2", "name": "charge", "timestamp": NOW_MS - 50000, "finishedOn": NOW_MS, "failedReason": "x"}],
    )
    AuditEntry.objects.create(
        user=admin,
        username="admin",
        via="page",
        action="job.retry",
        connection="default",
        prefix=prefix,
        queue="orders",
        outcome=AuditEntry.OK,
        affected=1,
    )
    ApiToken.issue(admin, scopes=["read"], expires_at=timezone.now() + timezone.timedelta(days=90))
    return {
        "connection": "default",
        "prefix": prefix,
        "name": "orders",
        "job_id": "2",
        "task_id": task.pk,
        "search_id": search.pk,
        "rule_id": rule.pk,
        "channel_id": channel.pk,
        "scheduler_id": "nightly",
    }, admin


def page_routes():
    """(name, route) of every named URL pattern outside the admin and the API."""

    def walk(patterns, prefix=""):
        for p in patterns:
            if isinstance(p, URLResolver):
                if str(p.pattern) != "admin/":
                    yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern) and p.name:
                yield p.name, prefix + str(p.pattern)

    return [(name, route) for name, route in walk(get_resolver().url_patterns) if not route.startswith("api/")]


class _Text(HTMLParser):
    SHOWN = ("placeholder", "title", "aria-label", "alt")
    # Data, not words: code, and names isolated in <bdi> (a user called "admin" is not English left over).
    DATA = ("script", "style", "code", "pre", "bdi")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts, self.root, self._skip = [], {}, 0

    def handle_starttag(self, tag, attrs):
        if tag == "html":
            self.root = dict(attrs)
        if tag in self.DATA:
            self._skip += 1
        self.texts += [v.strip() for k, v in attrs if k in self.SHOWN and v]

    def handle_endtag(self, tag):
        if tag in self.DATA:
            self._skip = max(0, self._skip - 1)

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.texts.append(" ".join(data.split()))


def english_msgids() -> tuple[set[str], list[str]]:
    """The English texts the catalog translates differently: whole texts (without
    placeholders), and the longer ones, which must not appear even inside a text node."""
    whole = set()
    for e in polib.pofile(str(CATALOG)):
        if (
            e.msgid_plural
            or "%(" in e.msgid
            or "{" in e.msgid
            or e.msgstr == e.msgid
            or not re.search(r"[A-Za-z]{3}", e.msgid)
        ):
            continue
        whole.add(" ".join(e.msgid.split()))
    return whole, sorted(m for m in whole if len(m.split()) >= 3)


def parse(html: str) -> _Text:
    parser = _Text()
    parser.feed(html)
    return parser


def test_the_checker_finds_english_left_in_an_arabic_page():
    whole, long = english_msgids()
    texts = parse(
        '<html lang="ar"><p>Audit log</p><p title="x">وشيء: Nothing recorded matching these filters.</p></html>'
    ).texts
    assert "Audit log" in whole and [t for t in texts if t in whole or any(m in t for m in long)] == [
        "Audit log",
        "وشيء: Nothing recorded matching these filters.",
    ]


def test_every_page_renders_in_english_and_in_arabic(client, site):
    kwargs, admin = site
    client.force_login(admin)
    whole, long = english_msgids()
    checked = []
    for name, route in page_routes():
        if name in NOT_PAGES:
            continue
        args = {k: kwargs[k] for k in re.findall(r"<(?:\w+:)?(\w+)>", route)}
        url = reverse(name, kwargs=args)
        if name == "cron_preview":
            url += "?cron=0+2+*+*+0&time_zone=UTC"
        browser = Client() if name == "login" else client  # logged in, the login page redirects
        english = browser.get(url, HTTP_ACCEPT_LANGUAGE="en")
        arabic = browser.get(url, HTTP_ACCEPT_LANGUAGE="ar")
        assert english.status_code == arabic.status_code == 200, (name, english.status_code, arabic.status_code)
        page = parse(arabic.content.decode())
        if "<html" in arabic.content.decode():
            assert (page.root.get("lang"), page.root.get("dir")) == ("ar", "rtl"), name
            assert (
                parse(english.content.decode()).root.get("lang"),
                parse(english.content.decode()).root.get("dir"),
            ) == ("en", "ltr")
        left = [t for t in page.texts if t in whole or any(m in t for m in long)]
        assert not left, f"{url} shows English in Arabic: {left}"
        checked.append(name)
    assert {
        "overview",
        "queue",
        "job",
        "health",
        "alert_history",
        "channels",
        "audit",
        "tasks",
        "task",
        "tokens",
        "add_job",
        "queue_settings",
        "edit_retry",
    } <= set(checked)


@pytest.mark.parametrize("state", ["waiting", "failed", "delayed"])
def test_queue_tabs_and_job_lists_in_arabic(client, site, state):
    kwargs, admin = site
    client.force_login(admin)
    url = reverse("queue", args=[kwargs["connection"], kwargs["prefix"], "orders"]) + f"?state={state}"
    html = client.get(url, HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    whole, long = english_msgids()
    left = [t for t in parse(html).texts if t in whole or any(m in t for m in long)]
    assert not left, left


def test_ids_names_code_and_json_stay_left_to_right_inside_arabic_pages(client, site):
    kwargs, admin = site
    client.force_login(admin)
    job = client.get(
        reverse("job", args=[kwargs["connection"], kwargs["prefix"], "orders", "1"]), HTTP_ACCEPT_LANGUAGE="ar"
    ).content.decode()
    assert '<pre class="payload" dir="ltr">' in job and '<h1>المهمة <code dir="ltr">1</code>' in job
    # <code> (ids, prefixes, cron, option names) is left-to-right in any right-to-left page.
    css = (Path(__file__).resolve().parents[2] / "static" / "queuewatch.css").read_text()
    assert '[dir="rtl"] code, [dir="rtl"] pre { direction: ltr; unicode-bidi: isolate; }' in css
    assert "<bdi>إرسال الفاتورة</bdi>" in job  # an Arabic job name is isolated, whatever its direction
    failed = client.get(
        reverse("job", args=[kwargs["connection"], kwargs["prefix"], "orders", "2"]), HTTP_ACCEPT_LANGUAGE="ar"
    ).content.decode()
    assert '<pre class="reason" dir="ltr">' in failed and '<pre dir="ltr">Error: card declined' in failed
    queue = client.get(  # the waiting tab (the page opens on failed: job 2 failed)
        reverse("queue", args=[kwargs["connection"], kwargs["prefix"], "orders"]) + "?state=waiting",
        HTTP_ACCEPT_LANGUAGE="ar",
    ).content.decode()
    assert "<h1><bdi>orders</bdi><button" in queue and "<bdi>إرسال الفاتورة</bdi>" in queue
