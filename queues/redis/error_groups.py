"""Failed jobs grouped by a normalised failure fingerprint.

"Connection to 10.0.0.7:5432 timed out after 3001 ms" and "... 10.0.0.9:5432 ... 2999 ms" are
one problem. ``fingerprint`` replaces the parts that vary between occurrences (numbers, ids,
UUIDs, hex, addresses, e-mails, URLs' query strings, quoted values, dates) with placeholders and
hashes the result; ``error_groups`` counts the newest failed jobs per fingerprint.

Only the first line of a failure reason is used: it is the error message; further lines are
stack frames or wrapped output that would split one error into many groups.
"""

from __future__ import annotations

import json
import time

import redis

from ..error_groups import ErrorGroup, ErrorGroups, fingerprint, normalize
from ..keys import QueueRef
from ..safe_json import loads_or
from ..text import to_int, to_text
from . import replies
from .listing import SAMPLE_LIMIT

STACK_SAMPLES = 50  # groups that get a sample stack trace (the biggest ones)


RECENT_MS, PRIOR_MS = 5 * 60_000, 15 * 60_000


def error_groups(
    client: redis.Redis,
    *,
    queue: QueueRef,
    scan_limit: int = SAMPLE_LIMIT,
    batch: int = 1000,
    now_ms: int | None = None,
) -> ErrorGroups:
    """Failed jobs grouped by fingerprint, biggest group first (a list of ``ErrorGroup``).

    Reads the newest ``scan_limit`` failed jobs: ZREVRANGE in batches plus one pipelined
    ``HGET failedReason`` per job (never data or stack traces), then one HGET of a stack trace
    for each of the ``STACK_SAMPLES`` biggest groups. ``scanned``/``total`` say whether every
    failed job was seen. Worst case: ``1 + ceil(scan_limit / batch) + scan_limit + STACK_SAMPLES``
    commands (2,053 at the defaults), however many jobs have failed."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    key = queue.state_key("failed")
    total = client.zcard(key)
    groups: dict[str, ErrorGroup] = {}
    cache: dict[str, tuple[str, str]] = {}  # reason -> (fingerprint, normalized): reasons repeat
    scanned = 0
    while scanned < min(total, scan_limit):
        pairs = replies.scored(client.zrevrange(key, scanned, min(scanned + batch, scan_limit) - 1, withscores=True))
        if not pairs:
            break
        pipe = client.pipeline(transaction=False)
        for member, _ in pairs:
            pipe.hget(queue.job_key(to_text(member)), "failedReason")
        for (member, score), raw in zip(pairs, pipe.execute()):
            if raw is None:
                continue  # removed since the range read
            reason = to_text(raw)
            if reason not in cache:
                cache[reason] = (fingerprint(reason), normalize(reason))
            fp, norm = cache[reason]
            at = to_int(score)
            g = groups.get(fp)
            if g is None:
                # Newest first, so the first job seen is the newest: it is the sample.
                groups[fp] = g = ErrorGroup(
                    fp, norm, 1, at, at, to_text(member), "", reason.strip().split("\n", 1)[0][:2000]
                )
            else:
                g.count += 1
                if at is not None:
                    g.first_seen_ms = at if g.first_seen_ms is None else min(g.first_seen_ms, at)
                    g.last_seen_ms = at if g.last_seen_ms is None else max(g.last_seen_ms, at)
            if at is not None and now_ms - at < RECENT_MS + PRIOR_MS:
                if now_ms - at < RECENT_MS:
                    g.last_5m += 1
                else:
                    g.prior_15m += 1
        scanned += len(pairs)
        if len(cache) > 50000:
            cache.clear()  # bounded memory on hostile data where every reason differs
    ordered = sorted(groups.values(), key=lambda g: (-g.count, -(g.last_seen_ms or 0)))
    _attach_stacks(client, queue, ordered[:STACK_SAMPLES])
    return ErrorGroups(ordered, scanned=scanned, total=total)


STACK_CAP = 16384


def _attach_stacks(client: redis.Redis, queue: QueueRef, groups: list[ErrorGroup]) -> None:
    pipe = client.pipeline(transaction=False)
    for g in groups:
        pipe.hget(queue.job_key(g.sample_job_id), "stacktrace")
    for g, raw in zip(groups, pipe.execute() if groups else []):
        text = to_text(raw, "[]")
        stacks = loads_or(text, [text])
        last = stacks[-1] if isinstance(stacks, list) and stacks else ""
        g.attach_stack((last if isinstance(last, str) else json.dumps(last))[:STACK_CAP])
