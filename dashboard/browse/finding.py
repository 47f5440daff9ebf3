"""Finding a job: by id across every queue the user sees, and by a field of its data within one
state of a queue. Both go through each connection's jobs facet and are bounded: an id search
makes one existence check per queue, at most ``QUEUEWATCH_FIND_MAX_QUEUES`` of them; a data
search examines at most ``QUEUEWATCH_SCAN_SAMPLE`` jobs per step (``queues.data_search``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from dashboard.accounts import scopes
from dashboard.connections.registry import get_redactor, get_registry
from dashboard.core.i18n import translate
from queues.data_search import DataQuery, DataSearch
from queues.errors import NotOffered, SourceUnavailable, UnreadableQueueData
from queues.keys import QueueRef

MAX_JOB_ID = 1000  # characters of an id to look for


@dataclass
class FoundById:
    job_id: str
    found: list[QueueRef] = field(default_factory=list)
    checked: int = 0  # queues checked (one existence check each)
    queues: int = 0  # queues the user sees on the connections that answered
    bound: int = 0  # the most queues one search checks
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (connection, why) not searched

    @property
    def bound_hit(self) -> bool:
        return self.checked < self.queues

    def as_dict(self) -> dict:
        return {
            "job_id": self.job_id,
            "found": [{"connection": q.connection, "prefix": q.prefix, "queue": q.name} for q in self.found],
            "queues_checked": self.checked,
            "queues": self.queues,
            "bound": self.bound,
            "bound_hit": self.bound_hit,
            "skipped": [{"connection": c, "reason": why} for c, why in self.skipped],
        }


def visible_queues(user) -> tuple[list[QueueRef], list[tuple[str, str]]]:
    """Every queue ``user`` sees, connection by connection (from the published lists: no scan
    when a monitor runs), and the connections that could not be listed, with why."""
    registry = get_registry()
    queues, skipped = [], []
    for name in registry.names:
        try:
            queues += scopes.visible_queues(user, registry.queues(name))
        except SourceUnavailable as exc:
            skipped.append((name, exc.reason))
    return queues, skipped


def find_by_id(user, job_id: str) -> FoundById:
    """The queues holding a job ``job_id``: one existence check per queue, in connection and
    list order, stopping after ``QUEUEWATCH_FIND_MAX_QUEUES`` checks."""
    registry = get_registry()
    queues, skipped = visible_queues(user)
    result = FoundById(job_id=job_id, queues=len(queues), bound=settings.QUEUEWATCH_FIND_MAX_QUEUES, skipped=skipped)
    given_up: set[str] = set()
    for queue in queues:
        if result.checked >= result.bound:
            break
        if queue.connection in given_up:
            result.queues -= 1  # not searched: said in ``skipped``
            continue
        try:
            result.checked += 1
            if registry.jobs(queue.connection).exists(queue, job_id):
                result.found.append(queue)
        except UnreadableQueueData:
            continue  # that queue's keys are not BullMQ's: not found there; the others still answer
        except (NotOffered, SourceUnavailable) as exc:
            why = translate(exc.message) if isinstance(exc, NotOffered) else exc.reason
            result.skipped.append((queue.connection, why))
            given_up.add(queue.connection)
            result.checked -= 1
            result.queues -= 1
    return result


def search_data(queue: QueueRef, state: str, *, query: DataQuery, offset: int) -> DataSearch:
    """One bounded step of a search by data (``NotOffered`` where the kind cannot search)."""
    return (
        get_registry()
        .jobs(queue.connection)
        .search_data(
            queue,
            state,
            query=query,
            offset=offset,
            scan_limit=settings.QUEUEWATCH_SCAN_SAMPLE,
            data_cap=settings.QUEUEWATCH_PAYLOAD_CAP,
            redactor=get_redactor(),
        )
    )
