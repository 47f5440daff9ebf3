"""Job schedulers (BullMQ 6) and legacy repeat metadata.

Schedulers live in the ``repeat`` ZSET (member = scheduler id, score = next run in ms) with a
definition hash ``repeat:<id>``. Two legacy layouts can also be found there (reference §6.2):
the pre-hash key shape ``name:jobId:endDate:tz:pattern`` with no hash — BullMQ 6 throws on it —
and v5 hashed repeatables whose hash lacks ``ic`` — BullMQ 6 silently adopts them. Both are
flagged with what to do about them.
"""

from __future__ import annotations

import redis

from ..keys import QueueRef
from ..schedulers import Scheduler
from ..text import to_int, to_text
from . import replies

MAX_SCHEDULERS = 1000


def is_legacy_key_shape(member: str) -> bool:
    """``name:jobId:endDate:tz:pattern|every`` — 5 parts, 3rd empty or numeric, last a cron
    pattern (contains a space) or a number of milliseconds."""
    parts = member.split(":")
    if len(parts) != 5:
        return False
    end_date, last = parts[2], parts[4]
    return (end_date == "" or end_date.isdigit()) and (" " in last or last.isdigit())


def read_schedulers(client: redis.Redis, queue: QueueRef) -> list[Scheduler]:
    members = replies.scored(client.zrange(queue.key("repeat"), 0, MAX_SCHEDULERS - 1, withscores=True))
    pipe = client.pipeline(transaction=False)
    for member, _score in members:
        pipe.hgetall(queue.key("repeat:") + to_text(member))
    hashes = pipe.execute() if members else []
    result = []
    for (member, score), h in zip(members, hashes):
        sid = to_text(member)
        h = {to_text(k): to_text(v) for k, v in h.items()}
        if not h and is_legacy_key_shape(sid):
            parts = sid.split(":")
            legacy = "key-shape"
            name, tz, spec = parts[0], parts[3], parts[4]
            pattern, every = (spec, None) if " " in spec else ("", to_int(spec))
            end_date = to_int(parts[2])
        else:
            legacy = "" if "ic" in h else ("v5-hash" if h else "key-shape")
            name, tz, pattern, every = h.get("name", ""), h.get("tz", ""), h.get("pattern", ""), to_int(h.get("every"))
            end_date = to_int(h.get("endDate"))
        result.append(
            Scheduler(
                id=sid,
                name=name,
                pattern=pattern,
                every=every,
                tz=tz,
                next_run=int(score) if score is not None else None,
                iterations=to_int(h.get("ic")),
                limit=to_int(h.get("limit")),
                start_date=to_int(h.get("startDate")),
                end_date=end_date,
                legacy=legacy,
            )
        )
    return result
