"""Runs background searches by data (``SearchTask`` rows) in the leading monitor, beside the
bulk runner and under the same lease (``dashboard.core.leased_runner``).

Each step is one bounded call of the jobs facet (``finding.search_data``: at most
``QUEUEWATCH_SCAN_SAMPLE`` jobs examined), saved in the row on the condition that this runner
still holds it, then a pause of ``QUEUEWATCH_SEARCH_PACE_MS``: no step makes the monitored
server do unbounded work, and a long search leaves it room. Before each step the row's heartbeat
is renewed and a cancel request honoured. A monitor killed mid-search is replaced by one that
takes the stale lease and goes on from the saved offset (a step saved twice cannot happen: the
save is conditional on the lease). The search ends at the end of the state, or once
``SearchTask.MAX_KEPT`` matches are kept.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone
from django.utils.translation import gettext_noop

from dashboard.accounts import scopes
from dashboard.browse import finding
from dashboard.browse.models import SearchTask
from dashboard.core.db import db_retry
from dashboard.core.leased_runner import Interrupted, LeasedRunner
from queues.data_search import DataQuery
from queues.errors import SourceUnavailable
from queues.keys import QueueRef

log = logging.getLogger("queuewatch.search")

REASON_CHARS = 300  # of a failure reason kept with a match


def search_queue(task: SearchTask) -> QueueRef:
    return QueueRef(task.connection, task.prefix, task.queue)


def kept(job) -> dict:
    """What a match keeps: enough for a row with a link to the job (redacted already)."""
    reason = job.failed_reason or ""
    return {
        "id": job.id,
        "name": job.name,
        "timestamp": job.timestamp,
        "finishedOn": job.finished_on,
        "failedReason": reason[:REASON_CHARS],
    }


class SearchRunner(LeasedRunner):
    model = SearchTask
    kind = "search"
    max_parallel = 2  # searches at once; each is paced, so a few share the server politely

    def run_task(self, task: SearchTask) -> None:
        try:
            if not scopes.may_see(task.created_by, search_queue(task)):
                # Its owner's grants changed since it started: it stops, saying why.
                self.close(task, SearchTask.FAILED, error=gettext_noop("The queue is no longer in your grants."))
                return
            query = DataQuery.parse(task.where)
            while True:
                if self.should_cancel(task.pk):
                    self.close(task, SearchTask.CANCELLED)
                    return
                if self.step(task, query):
                    self.close(task, SearchTask.DONE)
                    return
                self.stop_event.wait(settings.QUEUEWATCH_SEARCH_PACE_MS / 1000)
        except (Interrupted, DatabaseError, SourceUnavailable) as exc:
            # As a bulk task: left running with its saved offset; its lease goes stale and it is
            # taken again and resumed (an unreachable server is not the search's fault).
            log.warning("search runner: search %s interrupted (%s); it stays resumable", task.pk, exc)
        except Exception as exc:
            log.exception("search runner: search %s failed", task.pk)
            self.close(task, SearchTask.FAILED, error=f"{exc.__class__.__name__}: {exc}")

    def step(self, task: SearchTask, query: DataQuery) -> bool:
        """One bounded step from the saved offset, saved; whether the search is over."""
        found = finding.search_data(search_queue(task), task.job_state, query=query, offset=task.offset)
        matches = list(task.matches or [])
        room = SearchTask.MAX_KEPT - len(matches)
        matches += [kept(j) for j in found.matches[:room]]
        over = found.complete or len(matches) >= SearchTask.MAX_KEPT
        fields = dict(
            offset=found.examined,
            examined=found.examined,
            in_state=found.in_state,
            steps=task.steps + 1,
            too_large=task.too_large + found.too_large,
            matches=matches,
            heartbeat_at=timezone.now(),
        )
        if not db_retry(lambda: self.mine(task.pk).update(**fields)):
            raise Interrupted(f"search {task.pk} is no longer ours")
        for name, value in fields.items():
            setattr(task, name, value)
        return over

    def close(self, task: SearchTask, state: str, *, error: str = "") -> None:
        db_retry(lambda: self.mine(task.pk).update(state=state, finished_at=timezone.now(), error=error[:2000]))
