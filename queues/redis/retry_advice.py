"""The sample retry-policy advice is judged from (``queues.retry_advice``), read from a Redis node.

Read from a **sample**, never a scan: the newest ``SAMPLE_PER_STATE`` jobs of the wait list and
of the completed and failed sets (one ``LRANGE``/``ZREVRANGE`` each), one pipelined
``HMGET name opts atm`` per sampled job, and one ``ZCOUNT`` of the failed set over the last 15
minutes: at most 3 + 3 × 50 + 2 commands per queue (with ``ZCARD failed``), whatever its size.
BullMQ 6.7 stores a job's options as the JSON ``opts`` field, and ``atm`` counts the attempts a
finished job made.
"""

from __future__ import annotations

from ..keys import QueueRef
from ..retry_advice import (
    SAMPLE_PER_STATE,
    Sample,
    SampledJob,
)
from ..safe_json import loads_or
from ..text import to_int, to_text

SAMPLED = (("wait", "list"), ("completed", "zset"), ("failed", "zset"))
GROWTH_WINDOW_MS = 15 * 60 * 1000


def read_sample(client, queue: QueueRef, *, now_ms: int, per_state: int = SAMPLE_PER_STATE) -> Sample:
    """The newest jobs of each sampled state and their options: two pipelines, bounded."""
    pipe = client.pipeline(transaction=False)
    for state, kind in SAMPLED:
        if kind == "list":
            pipe.lrange(queue.key(state), 0, per_state - 1)  # BullMQ LPUSHes: the head is the newest
        else:
            pipe.zrevrange(queue.key(state), 0, per_state - 1)
    pipe.zcount(queue.key("failed"), now_ms - GROWTH_WINDOW_MS, "+inf")  # scored by finishedOn
    pipe.zcard(queue.key("failed"))
    *ranges, failed_recent, failed_count = pipe.execute()
    ids = [(state, to_text(i)) for (state, _kind), found in zip(SAMPLED, ranges) for i in found]
    pipe = client.pipeline(transaction=False)
    for _state, job_id in ids:
        pipe.hmget(queue.job_key(job_id), "name", "opts", "atm")
    jobs = []
    for (state, job_id), (name, opts, atm) in zip(ids, pipe.execute()):
        if opts is None and name is None:
            continue  # removed between the two reads
        parsed = loads_or(opts or "{}", {})
        jobs.append(
            SampledJob(job_id, state, to_text(name), parsed if isinstance(parsed, dict) else {}, to_int(atm, 0) or 0)
        )
    return Sample(queue, jobs, int(failed_recent or 0), int(failed_count or 0))
