"""How many jobs a bulk task's plan targets now, counted on a Redis node."""

from __future__ import annotations

import redis

from ...bulk.plan import BulkPlan
from ..selection import preview, scan_length


def plan_total(client: redis.Redis, plan: BulkPlan, limit: int | None = None) -> tuple[int | None, int]:
    """How many jobs the plan targets now (the preview count; explicit ids: their number), and,
    when that is not known yet, how many entries the task's scan will pass. A filter that reads
    jobs examines at most ``limit`` entries here: past that the total is None (still to be
    counted), since counting a big state in one go before a paced task would read every job at
    full speed, and then the task reads them all again."""
    if plan.job_ids is not None:
        return len(plan.job_ids), 0
    filt = plan.scan_filter
    counted = preview(client, queue=plan.queue, filt=filt, before_ms=plan.before_ms, sample=0, limit=limit)
    if counted.complete:
        return counted.count, 0
    return None, scan_length(client, queue=plan.queue, filt=filt, before_ms=plan.before_ms)
