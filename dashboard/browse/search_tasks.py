"""Background searches by data, for the pages and the API: starting one, the caller's own, and
cancelling. A search is a read: any role that sees the queue may start one; only its owner sees
it (another user's search is "not found", as a queue outside one's grants is), and a search on
a queue its owner no longer sees is left out of their lists."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import ngettext

from dashboard.accounts import scopes
from dashboard.browse.models import SearchTask
from dashboard.browse.search_runner import search_queue
from dashboard.core.db import db_retry
from queues.data_search import DataQuery
from queues.keys import QueueRef

KEPT_FINISHED = 50  # finished searches kept per user (their page and the list show them)


class TooManySearches(Exception):
    """The caller already has ``QUEUEWATCH_SEARCH_MAX_ACTIVE`` searches pending or running."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(self.message())

    def message(self) -> str:
        """In the reader's language (the active one)."""
        return ngettext(
            "You have %(n)d background search running: cancel it or let it finish first.",
            "You have %(n)d background searches running: cancel one or let one finish first.",
            self.limit,
        ) % {"n": self.limit}


def own(user) -> QuerySet[SearchTask]:
    """The user's own searches, on queues they still see."""
    rows = SearchTask.objects.filter(created_by_id=user.pk)
    allowed = scopes.queue_filter(user)
    return rows.filter(allowed) if allowed is not None else rows


def start(user, queue: QueueRef, state: str, query: DataQuery) -> SearchTask:
    """A new pending search (the caller has checked the queue is theirs to see); the monitor
    takes it within a second."""
    limit = settings.QUEUEWATCH_SEARCH_MAX_ACTIVE
    mine = SearchTask.objects.filter(created_by_id=user.pk)
    if mine.filter(state__in=SearchTask.ACTIVE_STATES).count() >= limit:
        raise TooManySearches(limit)
    # Rows stay bounded: a user's finished searches beyond the newest KEPT_FINISHED go.
    old = mine.exclude(state__in=SearchTask.ACTIVE_STATES).order_by("-pk").values_list("pk", flat=True)[KEPT_FINISHED:]
    SearchTask.objects.filter(pk__in=list(old)).delete()
    return SearchTask.objects.create(
        created_by=user,
        connection=queue.connection,
        prefix=queue.prefix,
        queue=queue.name,
        job_state=state,
        where=query.text(),
    )


def cancel(task: SearchTask) -> bool:
    """Ask the search to stop (a pending one stops at once); False if it had already ended.
    What it found stays shown."""
    if task.state == SearchTask.PENDING and db_retry(
        lambda: SearchTask.objects.filter(pk=task.pk, state=SearchTask.PENDING).update(
            state=SearchTask.CANCELLED, cancel_requested=True, finished_at=timezone.now()
        )
    ):
        return True
    return bool(
        db_retry(
            lambda: SearchTask.objects.filter(pk=task.pk, state__in=SearchTask.ACTIVE_STATES).update(
                cancel_requested=True
            )
        )
    )


def job_link(task: SearchTask, job_id: str) -> str:
    return reverse("job", args=[task.connection, task.prefix, task.queue, job_id])


def as_dict(task: SearchTask) -> dict:
    queue = search_queue(task)
    return {
        "id": task.pk,
        "connection": queue.connection,
        "prefix": queue.prefix,
        "queue": queue.name,
        "state": task.job_state,
        "where": task.where,
        "status": task.state,
        "cancel_requested": task.cancel_requested,
        "created_at": task.created_at.isoformat(),
        "started_at": task.started_at.isoformat() if task.started_at else None,
        "finished_at": task.finished_at.isoformat() if task.finished_at else None,
        "examined": task.examined,
        "in_state": task.in_state,
        "steps": task.steps,
        "too_large": task.too_large,
        "matches_capped": task.capped,
        "max_matches": SearchTask.MAX_KEPT,
        "jobs": [{**m, "url": job_link(task, m["id"])} for m in task.matches or []],
        "error": task.error,
    }
