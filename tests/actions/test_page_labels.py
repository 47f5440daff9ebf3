"""Readable labels on the action pages: the audit log lists ids and shows times and details by
name (not ``ids=['2', '3']`` or ``before_ms=1796069134903``); a task says the pace asked."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from dashboard.actions.models import BulkTask
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef

pytestmark = [pytest.mark.django_db]

Q = QueueRef("default", "bull", "orders")
BEFORE_MS = 1796069134903  # 2026-11-30T20:05:34.903Z


def test_audit_log_lists_ids_and_shows_times_and_details_by_name(logged_in):
    ids = [str(i) for i in range(2, 30)]
    audit.record(
        user=None,
        via="page",
        action="bulk.retry",
        queue=Q,
        outcome=AuditEntry.OK,
        job_ids=ids,
        selection={"state": "failed", "before_ms": BEFORE_MS, "rate": 0.5, "reset_counters": True, "ids": ["a", "b"]},
    )
    html = logged_in.get(reverse("audit")).content.decode()
    assert "ids=[" not in html and "before_ms=" not in html
    ids = '<code class="qw-id" title="2" dir="ltr">2</code><code class="qw-id" title="3" dir="ltr">3</code>'
    assert f'<span class="audit-ids" dir="ltr">{ids}' in html  # a list, not a repr
    assert re.search(r"and <data class=\"qw-num\" value=\"8\">8</data> more", html)  # 28 ids, 20 shown
    assert '<time datetime="2026-11-30T20:05:34.903Z" data-qw-time="s" dir="ltr">2026-11-30 20:05:34 UTC</time>' in html
    assert "jobs from before:" in html and "paced at (jobs/s):" in html and "counters reset:</span>" in html
    assert "When (UTC)" not in html  # the time is in the page's zone, named in the footer


def test_task_page_says_the_pace_asked(logged_in):
    task = BulkTask.objects.create(
        action="retry",
        connection=Q.connection,
        prefix=Q.prefix,
        queue=Q.name,
        selection={"state": "failed"},
        before_ms=BEFORE_MS,
        rate=0.5,
        reason="why",
        state=BulkTask.DONE,
        total=12000,
        moved=12000,
    )
    html = logged_in.get(reverse("task", args=[task.pk])).content.decode()
    assert "(paced at 0.5/s)" in html
    assert '<dd class="moved"><data class="qw-num" value="12000">12,000</data></dd>' in html


def test_task_page_names_why_jobs_were_skipped_and_what_the_copies_kept_in_the_readers_language(logged_in):
    task = BulkTask.objects.create(
        action="redrive",
        connection=Q.connection,
        prefix=Q.prefix,
        queue=Q.name,
        selection={"state": "waiting"},
        before_ms=BEFORE_MS,
        rate=None,
        reason="why",
        state=BulkTask.DONE,
        total=10,
        moved=6,
        skipped=4,
        progress={
            "skipped_by": {"target_exists": 3, "a_code_from_later": 1},
            "kept_by": {"job_id": 5, "deduplication": 2, "new_id": 1},
        },
    )
    english = logged_in.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    skipped = re.search(r'<small class="muted skipped-by">(.*?)</small>', english).group(1)
    assert re.sub(r"<[^>]+>", "", skipped) == "(an earlier copy is still in the source queue: 3, a_code_from_later: 1)"
    kept = re.search(r'<dd class="kept">(.*?)</dd>', english).group(1)
    # In the labels' order, whatever order the database keeps a JSON object's keys in.
    assert re.sub(r"<[^>]+>", "", kept) == "their id: 5, a new id: 1, their deduplication id: 2"
    arabic = logged_in.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "نسخة سابقة لا تزال في الطابور المصدر" in arabic and "معرّف إزالة التكرار الخاص بها" in arabic
    assert "an earlier copy" not in arabic and "their id" not in arabic


def test_a_task_still_counting_says_how_far_through_the_state_it_is(logged_in):
    task = BulkTask.objects.create(
        action="retry",
        connection=Q.connection,
        prefix=Q.prefix,
        queue=Q.name,
        selection={"state": "failed", "name": "a"},
        before_ms=BEFORE_MS,
        rate=100,
        reason="why",
        state=BulkTask.RUNNING,
        total=None,
        moved=30,
        progress={"total": None, "examined": 3000, "in_state": 10000, "percent": 30.0},
    )
    english = logged_in.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    total = re.search(r"<dt>Total</dt><dd>(.*?)</dd>", english).group(1)
    assert re.sub(r"<[^>]+>", "", total) == "counting: 3,000 of 10,000 examined"
    assert 'data-percent="30"' in english and '<dd class="remaining">—</dd>' in english
    arabic = logged_in.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "جارٍ العدّ" in arabic and "counting" not in arabic
    body = logged_in.get(reverse("api_task", args=[task.pk])).json()
    assert (body["total"], body["remaining"], body["percent"], body["examined"], body["in_state"]) == (
        None,
        None,
        30,
        3000,
        10000,
    )
