"""One job scheduler as its page shows it: the listed entry, its definition and template, its
pending iteration and its last run (``queues.scheduler_runs``).

BullMQ keeps no record of a scheduler's last run: its iterations are jobs named
``repeat:<id>:<due time>``. The pending one is the ``repeat`` score's; the last run is looked
for at the slot before it (the score itself once the scheduler has finished), then among the
newest finished and active jobs (an edit or a catch-up moves the slots), and is not shown when
``removeOnComplete`` has already deleted it."""

from __future__ import annotations

import redis

from ..keys import QueueRef
from ..scheduler_runs import Iteration, SchedulerDetail, iteration_id, iteration_millis, previous_slot
from ..text import to_ms, to_text
from .jobs import job_state
from .scheduler_edit import read_spec
from .schedulers import read_scheduler

RECENT = 500  # newest completed and failed jobs (and active ones) looked through for the last run


def read_detail(
    client: redis.Redis, queue: QueueRef, scheduler_id: str, *, cron_tz: str = ""
) -> SchedulerDetail | None:
    scheduler = read_scheduler(client, queue, scheduler_id, cron_tz=cron_tz)
    if scheduler is None:
        return None
    score = to_ms(client.zscore(queue.key("repeat"), scheduler_id))
    pending = None
    if score is not None and not scheduler.finished:
        found = _iteration(client, queue, iteration_id(scheduler_id, score), score)
        pending = found if found.state else None
    last = None
    if score is not None:
        before = previous_slot(scheduler, score)
        last = _last_run(client, queue, scheduler_id, score, finished=scheduler.finished, before=before)
    spec = read_spec(client, queue=queue, scheduler_id=scheduler_id) if not scheduler.legacy else None
    return SchedulerDetail(scheduler=scheduler, spec=spec, pending=pending, last_run=last)


def _iteration(client: redis.Redis, queue: QueueRef, job_id: str, due: int) -> Iteration:
    state = job_state(client, queue, job_id)[0] if client.exists(queue.job_key(job_id)) else ""
    return Iteration(job_id=job_id, due=due, state="" if state == "unknown" else state)


def _last_run(
    client: redis.Redis, queue: QueueRef, scheduler_id: str, score: int, *, finished: bool, before: int | None
) -> Iteration | None:
    candidates = [score] if finished else []
    candidates += [before] if before is not None else []
    for due in candidates:
        found = _iteration(client, queue, iteration_id(scheduler_id, due), due)
        if found.state:
            return found
    # The newest of its iterations among the recent finished and running jobs, due before the
    # pending one (or at the score, once finished).
    pipe = client.pipeline(transaction=False)
    pipe.zrevrange(queue.state_key("completed"), 0, RECENT - 1)
    pipe.zrevrange(queue.state_key("failed"), 0, RECENT - 1)
    pipe.lrange(queue.state_key("active"), 0, RECENT - 1)
    best: tuple[int, str] | None = None
    for ids in pipe.execute():
        for raw in ids:
            job_id = to_text(raw)
            found_due = iteration_millis(scheduler_id, job_id)
            if found_due is None or (found_due > score if finished else found_due >= score):
                continue
            if best is None or found_due > best[0]:
                best = (found_due, job_id)
    if best is None:
        return None
    found = _iteration(client, queue, best[1], best[0])
    return found if found.state else None
