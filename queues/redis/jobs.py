"""Reading jobs: light summaries for lists, full details for the job page.

Job hashes are written by other programs and may be malformed: missing fields, non-JSON
``data``/``opts``, binary bytes, huge payloads. Every parse here degrades to showing the raw
text rather than raising. Nothing here writes to Redis.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import redis

from ..errors import JobNotFound
from ..jobs import (
    LIST_CAP,
    LOG_TAIL,
    SUMMARY_FIELDS,
    JobDetail,
    JobLive,
    JobSummary,
    Payload,
    child_outcome,
    options_payload,
    parent_flags,
    prepare_payload,
    summary_from_fields,
    summary_or_unreadable,
    telemetry_metadata,
)
from ..keys import QueueRef
from ..redact import Redactor
from ..safe_json import parse_json
from ..text import finite, to_text
from . import replies


def read_summaries(
    client: redis.Redis, queue: QueueRef, ids: list[str], scores: Sequence[float | None] | None = None
) -> list[JobSummary]:
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hmget(queue.job_key(job_id), SUMMARY_FIELDS)
    rows = pipe.execute() if ids else []
    scores = scores or [None] * len(ids)
    return [summary_or_unreadable(i, r, s) for i, r, s in zip(ids, rows, scores)]


def job_state(client: redis.Redis, queue: QueueRef, job_id: str) -> tuple[str, float | None]:
    """The job's state by set membership, in BullMQ's getState order, plus its score in a
    sorted set if it has one. ``failedReason`` is never used: it stays on completed jobs."""
    pipe = client.pipeline(transaction=False)
    zsets = ("completed", "failed", "delayed", "prioritized")
    for st in zsets:
        pipe.zscore(queue.state_key(st), job_id)
    pipe.lpos(queue.state_key("active"), job_id)
    pipe.lpos(queue.state_key("waiting"), job_id)
    pipe.lpos(queue.state_key("paused"), job_id)
    pipe.zscore(queue.state_key("waiting-children"), job_id)
    r = pipe.execute()
    for st, score in zip(zsets, r[:4]):
        if score is not None:
            return st, score
    if r[4] is not None:
        return "active", None
    if r[5] is not None or r[6] is not None:
        return "waiting", None
    if r[7] is not None:
        return "waiting-children", r[7]
    return "unknown", None


def read_job(client: redis.Redis, queue: QueueRef, job_id: str, *, cap: int, redactor: Redactor) -> JobDetail:
    key = queue.job_key(job_id)
    raw = replies.fields(client.hgetall(key))
    if not raw:
        raise JobNotFound(queue.name, job_id)
    f = {to_text(k): v for k, v in raw.items()}
    state, score = job_state(client, queue, job_id)

    pipe = client.pipeline(transaction=False)
    pipe.llen(key + ":logs")
    pipe.lrange(key + ":logs", -LOG_TAIL, -1)
    pipe.sscan(key + ":dependencies", 0, count=LIST_CAP)
    pipe.hscan(key + ":processed", 0, count=LIST_CAP)
    pipe.hscan(key + ":failed", 0, count=LIST_CAP)
    pipe.zrange(key + ":unsuccessful", 0, LIST_CAP - 1)
    dedup_id = to_text(f.get("deid"))
    if dedup_id:
        # Who holds the deduplication key now, and for how long (Queue.getDeduplicationJobId).
        pipe.get(queue.key(f"de:{dedup_id}"))
        pipe.pttl(queue.key(f"de:{dedup_id}"))
    logs_total, logs, (_, pending), (_, processed), (_, ignored), unsuccessful, *dedup = pipe.execute()
    dedup_owner, dedup_pttl = (dedup or [None, None])[:2]
    failed_children = sorted(to_text(k) for k in unsuccessful)[:LIST_CAP]
    # The children that failed their parent keep their reason on their own hash.
    reasons = _failure_reasons(client, failed_children)

    summary = summary_from_fields(job_id, [f.get(name) for name in SUMMARY_FIELDS], score).redacted(redactor)
    ok, stack = parse_json(to_text(f.get("stacktrace"), "[]"))
    if ok and isinstance(stack, list):
        stacktrace = [s if isinstance(s, str) else json.dumps(s) for s in stack]
    else:
        stacktrace = [to_text(f.get("stacktrace"))]

    def payload(name: str) -> Payload:
        return prepare_payload(to_text(f.get(name)), cap=cap, redactor=redactor)

    return JobDetail(
        queue=queue,
        id=job_id,
        state=state,
        summary=summary,
        data=payload("data"),
        opts=options_payload(to_text(f.get("opts")), cap=cap, redactor=redactor),
        returnvalue=payload("returnvalue"),
        progress=payload("progress"),
        failed_reason=redactor.text(to_text(f.get("failedReason"))),
        stacktrace=[redactor.text(s) for s in stacktrace],
        logs=[redactor.text(to_text(line)) for line in logs],
        logs_total=logs_total,
        parent=to_text(f.get("parentKey")),
        children_pending=sorted(to_text(k) for k in pending)[:LIST_CAP],
        children_processed=sorted(to_text(k) for k in processed)[:LIST_CAP],
        children_ignored=sorted(to_text(k) for k in ignored)[:LIST_CAP],
        children_failed=failed_children,
        child_outcomes={
            to_text(k): child_outcome(to_text(v), redactor)
            for k, v in [*processed.items(), *ignored.items(), *reasons.items()]
        },
        processed_by=to_text(f.get("pb")),
        flow_attachment_failed=f.get("flowAttachmentFailed") is not None,
        dedup_read=True,
        dedup_owner=to_text(dedup_owner) if dedup_owner is not None else None,
        dedup_ttl_ms=int(dedup_pttl) if isinstance(dedup_pttl, int) and dedup_pttl >= 0 else None,
        telemetry_metadata=redactor.text(telemetry_metadata(to_text(f.get("opts")))),
        parent_flags=parent_flags(to_text(f.get("parent"))) if f.get("parent") is not None else None,
    )


def _failure_reasons(client: redis.Redis, job_keys: list[str]) -> dict[str, bytes]:
    if not job_keys:
        return {}
    pipe = client.pipeline(transaction=False)
    for job_key in job_keys:
        pipe.hget(job_key, "failedReason")
    return {k: v for k, v in zip(job_keys, pipe.execute()) if v is not None}


def read_raw_field(client: redis.Redis, queue: QueueRef, job_id: str, field_name: str, *, redactor: Redactor) -> str:
    """The whole value of one payload field, redacted, for the download link."""
    if not client.exists(queue.job_key(job_id)):
        raise JobNotFound(queue.name, job_id)
    raw = to_text(client.hget(queue.job_key(job_id), field_name))
    ok, value = parse_json(raw)
    if ok:
        return json.dumps(redactor.value(value), ensure_ascii=False)
    return redactor.text(raw)


def read_job_live(
    client: redis.Redis, queue: QueueRef, job_id: str, *, redactor: Redactor, log_tail: int = 50
) -> JobLive | None:
    """A cheap re-read for live updates (no data/returnvalue/stacktrace); None if the job is gone."""
    key = queue.job_key(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.hmget(key, SUMMARY_FIELDS)
    pipe.hget(key, "progress")
    pipe.llen(key + ":logs")
    pipe.lrange(key + ":logs", -log_tail, -1)
    pipe.zcard(key + ":unsuccessful")
    values, progress, logs_total, logs, unsuccessful = pipe.execute()
    summary = summary_from_fields(job_id, values).redacted(redactor)
    if not summary.exists:
        return None
    state, score = job_state(client, queue, job_id)
    summary.score = finite(score)
    return JobLive(
        queue=queue,
        id=job_id,
        state=state,
        summary=summary,
        progress=prepare_payload(to_text(progress), cap=4096, redactor=redactor),
        logs=[redactor.text(to_text(line)) for line in logs],
        logs_total=logs_total,
        failed_reason=redactor.text(to_text(values[SUMMARY_FIELDS.index("failedReason")])),
        unsuccessful_children=unsuccessful,
    )
