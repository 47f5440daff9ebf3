"""The commands facet on PostgreSQL: every state change through BullMQ's own command files
(``queues.postgres.job_commands``: the ``.sql`` of the pinned PyPI package, the text Node BullMQ
6.7 runs), each action in one transaction, with the Redis facet's outcomes.

* Retry, discard, promote: the job's row locked first, then ``reprocess_job``/``remove``/``promote``.
* Redrive: ``queues.postgres.redrive`` (BullMQ's ``add_job`` for the copy and ``remove`` for the
  dead letter, in one transaction; refused between connections or schemas).
* Pause, clean, drain, obliterate: ``pause``, ``clean``, ``drain``, ``obliterate``, with the
  arguments Node's ``Queue.pause()``, ``Queue.clean(grace, limit, type)``, ``Queue.drain(delayed)``
  and ``Queue.obliterate()`` give them (obliterate in batches of 1000 jobs, one transaction each,
  as Node loops; refused unless the queue is paused and, as without ``force``, while jobs are active).
* Queue settings: the ``meta`` rows Node's ``setGlobalConcurrency``/``setGlobalRateLimit`` write
  (``set_queue_meta``, ``remove_queue_meta_fields``), the limiter (``get_rate_limit_ttl``,
  ``remove_rate_limit``) and ``get_counts``.

One difference from Redis: a retry with ``reset_counters`` resets the attempts made and
started (``reprocess_job``'s own flags) but not the stall counter, which no BullMQ command
resets on PostgreSQL (on Redis our composed script deletes ``stc``).
* Add, duplicate, edit-and-retry: ``queues.postgres.job_add`` (``add_job``; ``update_data`` +
  ``reprocess_job``).
"""

from __future__ import annotations

import time
from typing import NoReturn

import psycopg

from .. import actions, edit_retry, job_add
from ..errors import NotOffered, SourceUnavailable
from ..job_options import NewJob
from ..keys import QueueRef
from ..messages import _
from ..queue_settings import QueueSettings, SettingRefused
from ..states import CLEANABLE_STATES, RETRYABLE_STATES
from .connection import PostgresConnection, postgres_errors
from .job_add import add_in, edit_and_retry_in
from .job_commands import command_sql, discard_locked, lock_job, promote_locked, retry_locked, run, run_all
from .redrive import redrive_in

FLOW_ACTION_WORDS = _("actions on flows")

__all__ = ["KIND", "PostgresCommands", "command_sql", "run"]

KIND = "postgres"
OBLITERATE_BATCH = 1000  # Node's default ``count`` per call
# What the settings page counts, as get_counts.sql names them, in the Redis page's order.
_COUNTED = ("waiting", "active", "paused", "prioritized", "delayed", "waiting-children", "completed", "failed")


def _not_owner(batches: int) -> str:
    # English like the other refusals of the connection (``connection.WRITE_REFUSED``).
    done = (
        f"the {batches * OBLITERATE_BATCH} jobs deleted in the batches before stay deleted"
        if batches
        else "nothing was changed"
    )
    return (
        "PostgreSQL refused to obliterate the queue: BullMQ's last step drops the queue's job-id sequence, "
        "which only the role that owns it may do (the role the producers connect as); grant that role to "
        f"Queuewatch's user, or obliterate from the application ({done})"
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class PostgresCommands:
    def __init__(self, db: PostgresConnection, *, connection: str):
        self._db, self.connection = db, connection

    def _not_offered(self, what: str) -> NoReturn:
        raise NotOffered(connection=self.connection, kind=KIND, facet=what)

    # Not built on PostgreSQL yet (BullMQ's SQL has no such functions to call).
    def remove_child_dependency(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        self._not_offered(FLOW_ACTION_WORDS)

    def remove_unprocessed_children(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        self._not_offered(FLOW_ACTION_WORDS)

    def _writing(self):
        return postgres_errors(self.connection, self._db.url, writing=True)

    # --- jobs ---------------------------------------------------------------------------------

    def retry(self, queue: QueueRef, *, job_id: str, reset_counters: bool) -> actions.ActionResult:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            row = lock_job(conn, queue, job_id)
            if row is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            if row[0] not in RETRYABLE_STATES:
                return actions.not_retryable(job_id)
            return retry_locked(conn, queue, job_id, row, reset_counters=reset_counters)

    def discard(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            if lock_job(conn, queue, job_id) is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            return discard_locked(conn, queue, job_id)

    def promote(self, queue: QueueRef, *, job_id: str) -> actions.ActionResult:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            if lock_job(conn, queue, job_id) is None:
                return actions.ActionResult(job_id, actions.MISSING, actions.gone(job_id))
            return promote_locked(conn, queue, job_id)

    def redrive(
        self, dlq: QueueRef, *, job_id: str, source: QueueRef, payload_field: str | None = None
    ) -> actions.ActionResult:
        with self._writing(), self._db.transaction(dlq.prefix) as conn:
            return redrive_in(
                conn, dlq=dlq, job_id=job_id, source=source, payload_field=payload_field, now_ms=_now_ms()
            )

    def add(self, queue: QueueRef, *, job: NewJob, schema: dict | None) -> job_add.AddOutcome:
        """``Queue.add`` (and a duplicate's add), if the data passes the queue's ``schema``."""
        job_add.check_data(schema, job.data_json)
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            return add_in(conn, queue, job, now_ms=_now_ms())

    def edit_and_retry(
        self, queue: QueueRef, *, plan: edit_retry.EditPlan, reset_counters: bool
    ) -> actions.ActionResult:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            return edit_and_retry_in(conn, queue, plan, reset_counters=reset_counters)

    # --- queues -------------------------------------------------------------------------------

    def pause(self, queue: QueueRef, *, paused: bool) -> None:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            run(conn, "pause", (queue.name, paused))

    def clean(self, queue: QueueRef, *, state: str, older_than_ms: int, limit: int) -> int:
        """``Queue.clean(older_than_ms, limit, state)``: BullMQ's ``clean`` removes the jobs of
        ``state`` finished (completed, failed) or created (the others) before now less the age,
        oldest first, at most ``limit`` (0: all), a scheduler's next iteration never. Returns how
        many went."""
        if state not in CLEANABLE_STATES:
            raise ValueError(
                _(
                    "Cannot clean state '{state}'; choose one of {states}.",
                    state=state,
                    states=", ".join(CLEANABLE_STATES),
                )
            )
        if older_than_ms < 0 or limit < 0:
            raise ValueError(_("The age and the limit of a clean must not be negative."))
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            return len(run_all(conn, "clean", (queue.name, state, _now_ms() - older_than_ms, limit)))

    def drain(self, queue: QueueRef, *, delayed: bool) -> int:
        """``Queue.drain(delayed)``: waiting and prioritized jobs (and delayed ones when asked)
        go, never active, finished or a scheduler's next iteration. Returns how many went
        (counted before and after in the same transaction)."""
        counted = ("waiting", "prioritized", "delayed") if delayed else ("waiting", "prioritized")
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            before = self._counts(conn, queue)
            run(conn, "drain", (queue.name, delayed))
            after = self._counts(conn, queue)
        return sum(before[s] - after[s] for s in counted)

    def obliterate(self, queue: QueueRef) -> None:
        batches = 0
        while True:
            with self._writing(), self._db.transaction(queue.prefix) as conn:
                try:
                    found = run(conn, "obliterate", (queue.name, OBLITERATE_BATCH, False))
                except psycopg.errors.InsufficientPrivilege as exc:
                    if "owner" not in str(exc):
                        raise
                    raise SourceUnavailable(self.connection, _not_owner(batches)) from None
            batches += 1
            cursor = int(found[0]) if found else 0
            if cursor == -1:
                raise SettingRefused(
                    _("Queue {name} is not paused: pause it first, so no worker takes new jobs.", name=queue.name)
                )
            if cursor == -2:
                raise SettingRefused(
                    _(
                        "Queue {name} has active jobs: wait for them to finish (the queue is paused, "
                        "so no new ones start), then obliterate.",
                        name=queue.name,
                    )
                )
            if cursor == 0:
                return

    # --- settings -----------------------------------------------------------------------------

    @staticmethod
    def _counts(conn, queue: QueueRef) -> dict[str, int]:
        """``get_counts``, every waiting job under ``waiting`` (paused or not)."""
        row = run(conn, "get_counts", (queue.name,))
        names = ("active", "completed", "failed", "delayed", "waiting", "prioritized", "waiting-children")
        return {name: int(n) for name, n in zip(names, row or (0,) * 7)}

    def settings(self, queue: QueueRef) -> QueueSettings:
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            counts = self._counts(conn, queue)
            meta = dict(
                run_all(conn, "get_queue_meta_fields", (queue.name, ["concurrency", "max", "duration", "paused"]))
            )
            ttl = run(conn, "get_rate_limit_ttl", (queue.name, 0, _now_ms()))
            schedulers = run(conn, "get_job_schedulers_count", (queue.name,))
        paused = meta.get("paused") == "1"
        # As getJobCounts() reports a paused queue on this backend: its ready jobs under "paused".
        counts["paused"], counts["waiting"] = (counts["waiting"], 0) if paused else (0, counts["waiting"])
        limited = _int(ttl[0]) if ttl else 0
        return QueueSettings(
            concurrency=_int(meta.get("concurrency")),
            rate_max=_int(meta.get("max")),
            rate_duration_ms=_int(meta.get("duration")),
            limited_for_ms=max(0, limited or 0),
            paused=paused,
            counts={**{name: counts[name] for name in _COUNTED}, "schedulers": int(schedulers[0]) if schedulers else 0},
        )

    def set_concurrency(self, queue: QueueRef, *, concurrency: int | None) -> None:
        """``Queue.setGlobalConcurrency(n)``, or ``removeGlobalConcurrency()`` for ``None``."""
        if concurrency is not None and concurrency < 1:
            raise SettingRefused(_("Global concurrency must be 1 or more (remove it for no limit)."))
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            if concurrency is None:
                run(conn, "remove_queue_meta_fields", (queue.name, ["concurrency"]))
            else:
                run(conn, "set_queue_meta", (queue.name, ["concurrency"], [str(concurrency)]))

    def set_rate_limit(self, queue: QueueRef, *, max_jobs: int | None, duration_ms: int | None) -> None:
        """``Queue.setGlobalRateLimit(max, duration)``, or ``removeGlobalRateLimit()`` for ``None``."""
        if max_jobs is not None and (max_jobs < 1 or not duration_ms or duration_ms < 1):
            raise SettingRefused(_("A rate limit needs at least 1 job per at least 1 ms."))
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            if max_jobs is None:
                run(conn, "remove_queue_meta_fields", (queue.name, ["max", "duration"]))
            else:
                run(conn, "set_queue_meta", (queue.name, ["max", "duration"], [str(max_jobs), str(duration_ms)]))

    def rate_limit_for(self, queue: QueueRef, *, ms: int) -> None:
        self._not_offered(_("a rate-limit window set by hand (Queue.rateLimit)"))

    def remove_rate_limit_key(self, queue: QueueRef) -> bool:
        """``Queue.removeRateLimitKey()``. True if there was a limiter window."""
        with self._writing(), self._db.transaction(queue.prefix) as conn:
            found = run(conn, "remove_rate_limit", (queue.name,))
        return bool(found and int(found[0]) > 0)
