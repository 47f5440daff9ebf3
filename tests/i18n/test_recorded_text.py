"""Text stored as English before it was kept with its message id (a task's note, an audit row's
message) reads in the reader's language where it is a message the catalogue knows; any other
text (an exception's own words, a user's) is shown as recorded."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.actions.models import BulkTask
from dashboard.audit.models import AuditEntry

STOPPED = (
    "Stopped: Queuewatch is in read-only mode (QUEUEWATCH_READ_ONLY). What moved stays moved; "
    "start the task again once read-only mode is off."
)


@pytest.mark.django_db
def test_an_older_tasks_note_kept_as_english_text_reads_in_arabic(admin_client, admin_user):
    # Tasks stopped before their note was kept with its message id hold it as text in ``error``.
    stopped = STOPPED
    task = BulkTask.objects.create(
        created_by=admin_user,
        action="retry",
        connection="default",
        prefix="bull",
        queue="orders",
        selection={"state": "failed"},
        before_ms=0,
        reason="",
        state=BulkTask.CANCELLED,
        error=stopped,
    )
    arabic = admin_client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert stopped not in arabic and "QUEUEWATCH_READ_ONLY" in arabic
    english = admin_client.get(reverse("task", args=[task.pk]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert stopped in english


@pytest.mark.django_db
def test_an_older_audit_rows_message_reads_in_arabic_where_the_catalogue_knows_it(admin_client, admin_user):
    for message in (STOPPED, "ConnectionError: Error 111 connecting to 10.0.0.7:6379"):
        AuditEntry.objects.create(
            user=admin_user,
            username="admin",
            via="task",
            action="bulk.retry",
            outcome=AuditEntry.PARTIAL,
            message=message,
        )
    arabic = admin_client.get(reverse("audit"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert "أُوقفت: Queuewatch في وضع القراءة فقط" in arabic and "Stopped: Queuewatch" not in arabic
    assert "<bdi>ConnectionError: Error 111 connecting to 10.0.0.7:6379</bdi>" in arabic  # as recorded
