"""Redrive on PostgreSQL: move a job of an application dead-letter queue back into its source
queue of the same schema, keeping its identity by the rules of ``queues.redis.redrive`` (its
id when custom and free, else ``redrive-<dlq>-<id>``; its deduplication id, priority, lifo and
a delay not yet served; the envelope's data field as its data when the queue has one).

One transaction, inside the caller's (a savepoint, so one refused job never undoes a batch):
the dead letter's row is locked, the copy is added with BullMQ's ``add_job`` and the dead letter
removed with BullMQ's ``remove``. Both or neither: a repeat after a crash finds the dead letter
gone (or still there, nothing added), so no job is lost or doubled. A deduplication id held in
the source (``add_job`` then answers with the holder's id instead of adding) rolls the savepoint
back and leaves the dead letter where it is, as the Redis script does.

The outcomes and their messages are the Redis ones: the replies are built in the shape the
Redis script returns and read by ``queues.redis.redrive.redrive_outcome``.
"""

from __future__ import annotations

import json

import psycopg

from .. import redrive_rules as rules
from ..actions import MISSING, ActionResult, remove_outcome
from ..keys import QueueRef
from ..messages import _
from ..redrive_copy import COPIED_OPTS, RedriveCopy
from ..safe_json import loads_or
from .job_commands import SCHEDULER_JOB, run

ELSEWHERE = "other_connection"  # the source queue is not in this connection's schema

_READ = (
    "SELECT name, data::text, opts, dedup_id, state::text, process_at_ms, added_at_ms "
    "FROM job WHERE queue = %s AND id = %s FOR UPDATE"
)
_QUEUE_KNOWN = "SELECT EXISTS (SELECT 1 FROM meta WHERE queue = %s) OR EXISTS (SELECT 1 FROM job WHERE queue = %s)"
_STATE_OF = "SELECT state::text FROM job WHERE queue = %s AND id = %s FOR UPDATE"


class _Undo(Exception):
    """Roll the savepoint back and answer with this reply (the Redis script's shape)."""

    def __init__(self, reply: list):
        super().__init__(reply)
        self.reply = reply


def elsewhere_refusal(job_id: str, *, dlq: QueueRef, source: QueueRef) -> ActionResult:
    """A redrive between two connections (a PostgreSQL dead-letter queue and a Redis source, or
    two databases): it could not be one transaction, so a crash between the two halves would lose
    or double the job. Refused; nothing changes."""
    return ActionResult(
        job_id,
        ELSEWHERE,
        _(
            "Job {id} was not moved: {dlq} is on connection {dlq_connection} and {source} on {source_connection}. "
            "A redrive adds the copy and removes the dead letter in one transaction of one PostgreSQL database "
            "schema, so it cannot move a job between connections or schemas. It was left in {dlq}.",
            id=job_id,
            dlq=dlq.name,
            source=source.name,
            dlq_connection=f"{dlq.connection}/{dlq.prefix}",
            source_connection=f"{source.connection}/{source.prefix}",
        ),
    )


def copy_of(row: tuple, *, payload_field: str | None) -> RedriveCopy:
    """What the copy carries, from the dead letter's row (the rules: ``queues.redis.redrive``)."""
    name, data_text, opts, dedup_id, state, process_at, added_at = row
    unwrapped = missing = ""
    if payload_field:
        parsed = loads_or(data_text or "{}", None)
        if isinstance(parsed, dict) and payload_field in parsed:
            data_text = json.dumps(parsed[payload_field], separators=(",", ":"), ensure_ascii=False)
            unwrapped = payload_field
        else:
            missing = payload_field
    stored = opts if isinstance(opts, dict) else {}
    kept = {k: v for k, v in stored.items() if k in COPIED_OPTS}
    dedup = dedup_id or ""
    if dedup and not isinstance(kept.get("deduplication"), dict):
        kept["deduplication"] = {"id": dedup}
    return RedriveCopy(
        name=name or "",
        data_json=data_text or "{}",
        opts=kept,
        timestamp_raw=str(added_at or ""),
        dedup_id=dedup,
        due_ms=int(process_at) if state == "delayed" and process_at is not None else None,
        unwrapped=unwrapped,
        envelope_missing=missing,
    )


def _add_params(source: QueueRef, new_id: str, copy: RedriveCopy, *, now_ms: int) -> tuple:
    """``add_job``'s arguments as Node's ``Queue.add`` gives them for the copy's options."""
    _kind, opts = copy.placed(now_ms)
    attempts = opts.get("attempts")
    return (
        source.name,
        new_id,
        copy.name,
        copy.data_json,
        json.dumps(opts),
        int(opts.get("priority") or 0),
        int(opts.get("delay") or 0),
        now_ms,
        int(attempts) if isinstance(attempts, int) else 1,
        None,
        None,
        None,
        copy.dedup_id or None,
        None,
        bool(opts.get("lifo")),
    )


def _reply(
    conn: psycopg.Connection, dlq: QueueRef, job_id: str, source: QueueRef, copy: RedriveCopy, *, now_ms: int
) -> list:
    known = conn.execute(_QUEUE_KNOWN, (source.name, source.name)).fetchone()
    if not (known and known[0]):
        return [-102]
    taken: list[str] = []
    new_id = None
    for candidate in rules.candidate_ids(dlq_name=dlq.name, job_id=job_id, timestamp_raw=copy.timestamp_raw):
        held = conn.execute(_STATE_OF, (source.name, candidate)).fetchone()
        if held is None:
            new_id = candidate
            break
        if held[0] not in ("completed", "failed"):
            return [-100, candidate, held[0]]
        taken += [candidate, held[0]]
    if new_id is None:
        return [-104]
    try:
        with conn.transaction():  # a savepoint: a deduplication hit or a refusal undoes both halves
            try:
                removed = run(conn, "remove", (dlq.name, job_id, False))
            except psycopg.Error as exc:
                if exc.sqlstate == "BM001" and exc.diag.message_detail == str(SCHEDULER_JOB):
                    raise _Undo([SCHEDULER_JOB]) from None
                raise
            if not removed or int(removed[0]) != 1:
                raise _Undo([0])  # the row is locked by us and there: a worker holds its lock
            added = run(conn, "add_job", _add_params(source, new_id, copy, now_ms=now_ms))
            if added is None or added[0] != new_id:  # BullMQ answered with the deduplication holder
                raise _Undo([-103, added[0] if added else ""])
    except _Undo as undo:
        return undo.reply
    return [1, new_id, *taken]


def redrive_in(
    conn: psycopg.Connection,
    *,
    dlq: QueueRef,
    job_id: str,
    source: QueueRef,
    payload_field: str | None,
    now_ms: int,
) -> ActionResult:
    """Move one dead letter to ``source`` inside the caller's transaction (search path: the
    dead-letter queue's schema). Changes nothing unless the job moved."""
    if (source.connection, source.prefix) != (dlq.connection, dlq.prefix):
        return elsewhere_refusal(job_id, dlq=dlq, source=source)
    row = conn.execute(_READ, (dlq.name, job_id)).fetchone()
    if row is None:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    copy = copy_of(row, payload_field=payload_field)
    refused = rules.envelope_refusal(job_id, copy, dlq=dlq)
    if refused is not None:
        return refused
    reply = _reply(conn, dlq, job_id, source, copy, now_ms=now_ms)
    if reply[0] in (0, SCHEDULER_JOB):
        return remove_outcome(job_id, int(reply[0]))
    return rules.redrive_outcome(job_id, reply, dlq=dlq, source=source, copy=copy, now_ms=now_ms)
