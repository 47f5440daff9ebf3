"""The audit log shows what Queuewatch itself said in the reader's language: a message marked for
translation is kept with its id and parameters beside its English text (which the CSV export and
search keep), while text recorded as it was (older rows, a form's errors) is shown as recorded."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.actions import services
from dashboard.actions.bulk_runner import closing_message
from dashboard.actions.models import BulkTask
from dashboard.audit import log as audit
from dashboard.audit.models import AuditEntry
from queues.keys import QueueRef

pytestmark = [pytest.mark.django_db]

Q = QueueRef("default", "bull", "orders")


def a_task(**fields) -> BulkTask:
    return BulkTask.objects.create(
        action="retry",
        connection=Q.connection,
        prefix=Q.prefix,
        queue=Q.name,
        selection={"state": "failed"},
        reason="why",
        before_ms=1796069134903,
        **fields,
    )


def test_a_cancel_is_logged_in_english_and_shown_in_arabic(logged_in, user):
    task = a_task(state=BulkTask.PENDING)
    assert services.task_cancel(user=user, via="page", task=task)
    entry = AuditEntry.objects.get(action="bulk.cancel")
    assert entry.message == f"Cancel requested for task {task.pk} before it started."
    assert entry.message_data == {
        "msgid": "Cancel requested for task {task} before it started.",
        "params": {"task": task.pk},
    }

    arabic = logged_in.get(reverse("audit"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "Cancel requested" not in arabic
    assert f"طُلب إلغاء المهمة {task.pk} قبل أن تبدأ." in arabic
    english = logged_in.get(reverse("audit"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"Cancel requested for task {task.pk} before it started." in english
    csv = b"".join(logged_in.get(reverse("audit_csv")).streaming_content).decode()
    assert f"Cancel requested for task {task.pk} before it started." in csv


def test_a_finished_task_names_its_counts_and_refusals_in_the_readers_language(logged_in):
    task = a_task(state=BulkTask.DONE, total=3, moved=2, skipped=1, failed=0)
    message = closing_message(task, BulkTask.DONE, None, error="", note="")
    audit.record(user=None, via="task", action="bulk.retry", queue=Q, outcome=AuditEntry.OK, message=message)
    entry = AuditEntry.objects.get()
    assert entry.message == f"Task {task.pk} done: moved 2, skipped 1, failed 0 of 3."
    arabic = logged_in.get(reverse("audit"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "moved" not in arabic and "skipped" not in arabic


def test_text_recorded_as_it_was_is_shown_as_recorded_and_isolated(logged_in):
    audit.record(user=None, via="page", action="job.retry", queue=Q, outcome=AuditEntry.OK, message="Older row text")
    assert AuditEntry.objects.get().message_data is None
    arabic = logged_in.get(reverse("audit"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "<bdi>Older row text</bdi>" in arabic
