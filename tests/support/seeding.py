"""Jobs written straight into BullMQ's layout, for tests that need many of them fast."""

from __future__ import annotations

import json

from queues.keys import QueueRef


def seed_failed(
    r,
    queue: QueueRef,
    n: int,
    *,
    start_ms: int = 1_000_000,
    reason=lambda i: f"boom {i}",
    name=lambda i: "job",
    data=lambda i: {"i": i},
) -> list[str]:
    pipe = r.pipeline(transaction=False)
    ids = []
    for i in range(n):
        job_id = str(i + 1)
        ids.append(job_id)
        pipe.hset(
            queue.job_key(job_id),
            mapping={
                "name": name(i),
                "data": json.dumps(data(i)),
                "opts": '{"attempts":2}',
                "timestamp": start_ms - 10,
                "processedOn": start_ms + i,
                "finishedOn": start_ms + i,
                "atm": 2,
                "ats": 2,
                "failedReason": reason(i),
                "stacktrace": json.dumps([f"Error: {reason(i)}\n    at work (w.js:{i}:1)"]),
            },
        )
        pipe.zadd(queue.key("failed"), {job_id: start_ms + i})
    pipe.execute()
    return ids
