"""What each built-in action does: a thin adapter from its validated input
(``dashboard.actions.inputs``) to one framework-free function of ``queues.actions``.

A job action is ``run(source, *, queue, job_id, given)`` and returns ``queues.actions.ActionResult``;
a queue action is ``run(source, *, queue, given)`` and returns a ``QueueActionResult``; ``source`` is
the connection's source, whose facets (``queues.sources.facets``) do the work. Either
result says ``ok``, ``outcome`` and ``message``; the services audit it (``affected`` when the
result has it, else 1 for a job that was acted on).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext, ngettext

from dashboard.connections import dead_letters
from dashboard.core.labels import label
from dashboard.web.errors import InvalidInput
from queues import actions
from queues.keys import QueueRef
from queues.sources.facets import commands_of


@dataclass
class QueueActionResult:
    outcome: str  # as ActionResult's: "done" or why not
    message: str
    affected: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome == actions.DONE


def affected_by(result) -> int:
    """How many jobs (or queues) a result says were acted on, for the audit row and the API."""
    return getattr(result, "affected", int(result.ok))


# --- jobs -------------------------------------------------------------------------------------


def retry(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).retry(queue, job_id=job_id, reset_counters=given.reset_counters)


def discard(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).discard(queue, job_id=job_id)


def promote(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).promote(queue, job_id=job_id)


def remove_child_dependency(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).remove_child_dependency(queue, job_id=job_id)


def remove_unprocessed_children(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).remove_unprocessed_children(queue, job_id=job_id)


def redrive(source, *, queue: QueueRef, job_id: str, given) -> actions.ActionResult:
    return commands_of(source).redrive(
        queue,
        job_id=job_id,
        source=redrive_source(queue=queue),
        payload_field=dead_letters.envelope_for(queue.name).payload_field,
    )


def redrive_source(*, queue: QueueRef) -> QueueRef:
    """From configuration only: a job's data never chooses where an action writes."""
    name = dead_letters.rules().source_of(queue.name)
    if not name:
        raise InvalidInput(
            gettext(
                "'%(name)s' is not a dead-letter queue with a known source queue (see "
                "QUEUEWATCH_DLQ_PATTERNS and QUEUEWATCH_DLQ_MAP), so there is nowhere to redrive to."
            )
            % {"name": queue.name}
        )
    return QueueRef(queue.connection, queue.prefix, name)


# --- queues -----------------------------------------------------------------------------------


def pause(source, *, queue: QueueRef, given) -> QueueActionResult:
    commands_of(source).pause(queue, paused=True)
    return QueueActionResult(
        actions.DONE, gettext("Queue paused: workers finish their active jobs and take no new ones."), 1
    )


def resume(source, *, queue: QueueRef, given) -> QueueActionResult:
    commands_of(source).pause(queue, paused=False)
    return QueueActionResult(actions.DONE, gettext("Queue resumed: workers take jobs again."), 1)


def clean(source, *, queue: QueueRef, given) -> QueueActionResult:
    count = commands_of(source).clean(queue, state=given.state, older_than_ms=given.older_than_ms, limit=given.limit)
    removed = ngettext(
        "Removed %(n)d %(state)s job older than %(minutes)d min.",
        "Removed %(n)d %(state)s jobs older than %(minutes)d min.",
        count,
    )
    return QueueActionResult(
        actions.DONE,
        removed % {"n": count, "state": label(given.state), "minutes": given.older_than_ms // 60000},
        count,
    )
