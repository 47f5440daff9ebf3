"""The read side of a redrive: what the copy of a dead-letter job will carry, read from it (the
rules of what is kept and why: ``queues.redis.redrive``). No Django imports.
"""

from __future__ import annotations

import json

import redis

from ..keys import QueueRef
from ..redrive_copy import COPIED_OPTS, RedriveCopy
from ..safe_json import loads_or
from ..text import to_text

READ_FIELDS = ["name", "data", "opts", "timestamp", "deid"]


def read_pipelined(pipe, dlq: QueueRef, job_id: str) -> None:
    """Queue the reads ``copy_from_reads`` needs (two replies) on ``pipe``."""
    pipe.hmget(dlq.job_key(job_id), READ_FIELDS)
    pipe.zscore(dlq.key("delayed"), job_id)


def copy_from_reads(fields, delayed_score, *, payload_field: str | None = None) -> RedriveCopy | None:
    name, data, opts, ts, deid = fields
    if ts is None and name is None and data is None:
        return None
    data_text = to_text(data, "{}")
    unwrapped = missing = ""
    if payload_field:
        parsed = loads_or(data_text, None)
        if isinstance(parsed, dict) and payload_field in parsed:
            data_text = json.dumps(parsed[payload_field], separators=(",", ":"), ensure_ascii=False)
            unwrapped = payload_field
        else:
            missing = payload_field
    parsed_opts = loads_or(to_text(opts, "{}"), {})
    parsed_opts = parsed_opts if isinstance(parsed_opts, dict) else {}
    kept = {k: v for k, v in parsed_opts.items() if k in COPIED_OPTS}
    de = kept.get("de")
    de_id = de.get("id") if isinstance(de, dict) else None
    dedup_id = to_text(deid) or (de_id if isinstance(de_id, str) else "")
    if dedup_id and not isinstance(de, dict):
        kept["de"] = {"id": dedup_id}
    due = int(float(delayed_score)) // 0x1000 if delayed_score is not None else None
    return RedriveCopy(
        name=to_text(name),
        data_json=data_text,
        opts=kept,
        timestamp_raw=to_text(ts),
        dedup_id=dedup_id,
        due_ms=due,
        unwrapped=unwrapped,
        envelope_missing=missing,
    )


def read_redrive_copy(
    client: redis.Redis, *, dlq: QueueRef, job_id: str, payload_field: str | None = None
) -> RedriveCopy | None:
    pipe = client.pipeline(transaction=False)
    read_pipelined(pipe, dlq, job_id)
    return copy_from_reads(*pipe.execute(), payload_field=payload_field)
