"""A queue's deduplication keys on Redis (``queues.dedup``): a bounded ``SCAN`` for
``<prefix>:<queue>:de:*``, each key's owner, TTL and pending next add read in one pipeline, and
the release through BullMQ's own ``removeDeduplicationKey-1``.

The listing never walks the whole keyspace in one request: one page makes at most
``SCAN_CALLS`` SCAN calls of ``SCAN_COUNT`` and stops at ``PAGE_SIZE`` keys, returning the
cursor the next page starts from (SCAN's guarantees: a key held during the whole walk is seen at
least once; one may be seen twice, and the page drops repeats within itself).
"""

from __future__ import annotations

import redis

from ..actions import ActionResult
from ..dedup import DATA_PREVIEW, PAGE_SIZE, SCAN_CALLS, SCAN_COUNT, DedupKey, DedupPage, PendingNext, release_outcome
from ..keys import QueueRef
from ..redact import Redactor
from ..text import to_text
from .bullmq_scripts import bullmq_source, lua_script
from .discovery import glob_escape

REMOVE_DEDUP_KEY = lua_script(bullmq_source("removeDeduplicationKey-1.lua"))


def dedup_key(queue: QueueRef, dedup_id: str) -> str:
    return queue.key("de:" + dedup_id)


def scan_ids(client: redis.Redis, queue: QueueRef, *, cursor: str, size: int, calls: int) -> tuple[list[str], str, int]:
    """Up to ``size`` deduplication ids from ``cursor`` in at most ``calls`` SCAN calls: the ids,
    the cursor to go on from ("0": done) and the calls made."""
    pattern = glob_escape(queue.key("de:")) + "*"
    start = len(queue.key("de:"))
    found: list[str] = []
    made = 0
    at: int | str = cursor if cursor.isdigit() else "0"  # a cursor of another kind's pages: start over
    while made < calls and len(found) < size:
        at, keys = client.scan(cursor=int(at), match=pattern, count=SCAN_COUNT)
        made += 1
        for key in keys:
            dedup_id = to_text(key)[start:]
            if dedup_id not in found:
                found.append(dedup_id)
        if int(at) == 0:
            break
    return found, str(int(at)), made


def read_keys(client: redis.Redis, queue: QueueRef, ids: list[str], *, redactor: Redactor) -> list[DedupKey]:
    pipe = client.pipeline(transaction=False)
    for dedup_id in ids:
        pipe.get(dedup_key(queue, dedup_id))
        pipe.pttl(dedup_key(queue, dedup_id))
        pipe.hmget(queue.key("dn:" + dedup_id), "name", "data", "jid")
    replies = pipe.execute(raise_on_error=False)
    owners = [replies[i * 3] for i in range(len(ids))]
    pipe = client.pipeline(transaction=False)
    for owner in owners:
        pipe.exists(queue.job_key(to_text(owner))) if isinstance(owner, bytes | str) else pipe.echo("0")
    exists = pipe.execute(raise_on_error=False)
    keys = []
    for i, dedup_id in enumerate(ids):
        owner, ttl, nxt = replies[i * 3 : i * 3 + 3]
        if not isinstance(owner, bytes | str):
            continue  # gone since the scan (expired, released), or not a string: not BullMQ's key
        pending = None
        if isinstance(nxt, list) and nxt[1] is not None:
            data = redactor.text(to_text(nxt[1]))
            pending = PendingNext(
                name=to_text(nxt[0] or b""),
                data_preview=data[:DATA_PREVIEW],
                data_bytes=len(nxt[1]),
                job_id=to_text(nxt[2] or b""),
            )
        keys.append(
            DedupKey(
                dedup_id=dedup_id,
                owner=to_text(owner),
                ttl_ms=int(ttl) if isinstance(ttl, int) and ttl >= 0 else None,
                owner_exists=exists[i] == 1,
                pending=pending,
            )
        )
    return keys


def dedup_page(client: redis.Redis, queue: QueueRef, *, cursor: str, redactor: Redactor) -> DedupPage:
    ids, after, calls = scan_ids(client, queue, cursor=cursor, size=PAGE_SIZE, calls=SCAN_CALLS)
    return DedupPage(keys=read_keys(client, queue, ids, redactor=redactor), cursor=after, examined_calls=calls)


def release(client: redis.Redis, *, queue: QueueRef, dedup_id: str, owner: str) -> ActionResult:
    """``Job.removeDeduplicationKey``: delete the key only if it still names ``owner``."""
    removed = REMOVE_DEDUP_KEY(keys=[dedup_key(queue, dedup_id)], args=[owner], client=client)
    return release_outcome(dedup_id, owner, int(removed or 0))
