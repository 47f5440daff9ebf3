"""Queuewatch's own Redis (the "dashboard Redis"), in one module: the client, every document
kept there and the error its calls raise. Nothing else under ``dashboard/`` imports ``redis``
(tests/project/test_layers.py); the monitored Redis is reached through ``queues.sources``.

Documents: the queue list each connection's discovery found, the monitor's state and workers
documents, watches (who looks at what), the languages viewed, the requests for an exact read
and new viewers' nudges (published, not stored), and the cache of the latest live fragments
(written by ``dashboard.live.channels.Publisher``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import redis
from django.conf import settings

from dashboard.core import signing
from queues.keys import QueueRef
from queues.sources.redis_sentinel import is_sentinel_url, sentinel_primary_client

# What every call on the dashboard Redis may raise (the connection refused or lost, no dashboard
# Redis configured, a command refused): callers catch this and carry on without the document.
DashboardRedisError = redis.RedisError
DashboardRedis = redis.Redis

CACHE_PREFIX = "queuewatch:frag:"
WATCH_KEY = "queuewatch:watch"
WATCH_TTL_S = 90
SEP = "\x1f"
TAB_SEP = "\x1e"  # between a watch's member and the tab (websocket channel) that holds it

_clients: dict[str, redis.Redis] = {}


def dashboard_redis() -> redis.Redis:
    """A pooled client for Queuewatch's own Redis (one pool per URL, shared by threads)."""
    url = settings.QUEUEWATCH_DASHBOARD_REDIS_URL
    if url is None:
        raise redis.ConnectionError("no dashboard Redis is configured")
    if url not in _clients:
        if is_sentinel_url(url):  # the current primary, asked of the Sentinels on each new connection
            _clients[url] = sentinel_primary_client(url, socket_timeout=5)
        else:
            _clients[url] = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return _clients[url]


def put_document(client: redis.Redis, key: str, doc, *, ex: int) -> None:
    """Store ``doc`` as JSON under ``key`` for ``ex`` seconds, signed (``signing``): every
    document below goes through here, and is read back through ``get_document``."""
    client.set(key, signing.sign(signing.DOCUMENT, json.dumps(doc), bound_to=key), ex=ex)


def get_document(client: redis.Redis, key: str):
    """The document ``put_document`` stored under ``key``; None when there is none, or when
    what is there was not written by Queuewatch (its signature does not verify)."""
    text = signing.verify(signing.DOCUMENT, client.get(key), bound_to=key)
    return None if text is None else json.loads(text)


QUEUE_LIST_KEY = "queuewatch:queues:"
QUEUE_LIST_TTL_S = 60


def publish_queue_list(client: redis.Redis, connection: str, queues: list[QueueRef]) -> None:
    put_document(client, QUEUE_LIST_KEY + connection, [[q.prefix, q.name] for q in queues], ex=QUEUE_LIST_TTL_S)


def read_queue_list(client: redis.Redis, connection: str) -> list[QueueRef] | None:
    found = get_document(client, QUEUE_LIST_KEY + connection)
    if found is None or not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
        return None
    return [QueueRef(connection, prefix, name) for prefix, name in found]


EXACT_READS_CHANNEL = "queuewatch:exact-reads"


def request_exact_read(client: redis.Redis, queue: QueueRef) -> None:
    """Ask the leading monitor for an exact read of ``queue`` now: Queuewatch itself just
    changed it, maybe without an event (drain, obliterate, clean...). The monitor does the read
    (``dashboard.monitor.intake``); the web process only asks. Published, not stored: with no
    monitor leading nobody needs it (a new leader reads every queue when it starts), and it
    leaves no key behind in a dashboard Redis that is also the monitored one."""
    client.publish(EXACT_READS_CHANNEL, json.dumps([queue.connection, queue.prefix, queue.name]))


WATCHED_CHANNEL = "queuewatch:watched"


def announce_watching(client: redis.Redis, queue: QueueRef) -> None:
    """A tab just started watching something of ``queue`` (its header, a job list, a job): the
    leading monitor refreshes that queue at once instead of at its next tick, so the tab gets
    current fragments at once, also those nobody was watching (not rendered until now). It
    reads nothing more of the monitored Redis for this than the watch itself needs."""
    client.publish(WATCHED_CHANNEL, json.dumps([queue.connection, queue.prefix, queue.name]))


def exact_read_asked(message: dict | None) -> QueueRef | None:
    """The queue a message on ``EXACT_READS_CHANNEL`` (or ``WATCHED_CHANNEL``) names (None for
    anything else)."""
    if not message or message.get("type") != "message":
        return None
    try:
        connection, prefix, name = json.loads(message["data"])
        return QueueRef(str(connection), str(prefix), str(name))
    except (TypeError, ValueError):
        return None  # not one of ours: dropped


STATE_KEY = "queuewatch:state"


LAST_LED_KEY = "queuewatch:monitor:last-led"
LAST_LED_TTL_S = 30 * 24 * 3600


def publish_state(client: redis.Redis, state: dict) -> None:
    # Expires if no monitor refreshes it, so readers can tell "no monitor" from "all zero".
    put_document(client, STATE_KEY, state, ex=60)
    # Kept long after: how long no monitor has led, for the banner and standby monitors
    # (``dashboard.live.monitor_presence``), e.g. while someone else holds the leader lock.
    led = {"at": state.get("taken_at"), "monitor": state.get("monitor")}
    put_document(client, LAST_LED_KEY, led, ex=LAST_LED_TTL_S)


def read_last_led(client: redis.Redis) -> dict | None:
    return get_document(client, LAST_LED_KEY)


def read_state(client: redis.Redis) -> dict | None:
    return get_document(client, STATE_KEY)


WORKERS_KEY = "queuewatch:workers"


def publish_workers(client: redis.Redis, doc: dict, *, every_s: float) -> None:
    """Workers per queue (``queues.workers``), as the monitor last read them: ``{"taken_at",
    "queues": {queue_id: [worker dicts]}, "unknown": {connection: error}}``. Expires after three
    missed periods, so a page can tell "no monitor" (unknown) from "no workers"."""
    put_document(client, WORKERS_KEY, doc, ex=max(30, int(3 * every_s)))


def read_workers(client: redis.Redis) -> dict | None:
    return get_document(client, WORKERS_KEY)


def cache_fragment(pipe, group: str, element_id: str, html: str) -> None:
    """Keep ``html`` (signed: ``signing``) as ``group``'s element ``element_id`` for newcomers."""
    pipe.hset(CACHE_PREFIX + group, element_id, signing.sign(signing.FRAGMENT, html))


def cached_fragments(client: redis.Redis, group: str) -> list[str]:
    """The fragments kept for ``group``'s newcomers; one whose signature does not verify
    (not written by Queuewatch) is left out."""
    found = (signing.verify(signing.FRAGMENT, v) for v in client.hgetall(CACHE_PREFIX + group).values())
    return [html for html in found if html is not None]


@dataclass(frozen=True)
class Watch:
    """Someone is looking at a queue page's header (``kind="queue"``, no ``target``), a job
    list (``kind="list"``, ``target`` its state) or a job page (``kind="job"``, ``target`` the
    job id). Stored as one member of the ``WATCH_KEY`` sorted set; this class is the only place
    that knows that member's format."""

    QUEUE = "queue"
    LIST = "list"
    JOB = "job"

    kind: str
    queue: QueueRef
    target: str

    @classmethod
    def queue_page(cls, queue: QueueRef) -> Watch:
        return cls(cls.QUEUE, queue, "")

    @classmethod
    def job_list(cls, queue: QueueRef, state: str) -> Watch:
        return cls(cls.LIST, queue, state)

    @classmethod
    def job(cls, queue: QueueRef, job_id: str) -> Watch:
        return cls(cls.JOB, queue, job_id)

    def member(self) -> str:
        return SEP.join((self.kind, self.queue.connection, self.queue.prefix, self.queue.name, self.target))

    @classmethod
    def parse(cls, member: str) -> Watch | None:
        """The watch a set member stands for; ``None`` for anything malformed (a member
        written by another version, a job id that contains the separator)."""
        parts = member.split(SEP)
        if len(parts) != 5 or parts[0] not in (cls.QUEUE, cls.LIST, cls.JOB):
            return None
        kind, connection, prefix, name, target = parts
        return cls(kind, QueueRef(connection, prefix, name), target)


LANGUAGES_KEY = "queuewatch:languages"


def announce_language(client: redis.Redis, language: str) -> None:
    """Someone is viewing live fragments in ``language`` (refreshed like a watch): the monitor
    renders a language other than the default only while someone views it."""
    client.zadd(LANGUAGES_KEY, {language: time.time() + WATCH_TTL_S})


def viewed_languages(client: redis.Redis) -> set[str]:
    """Languages someone announced within the last ``WATCH_TTL_S`` seconds."""
    return {m.decode() if isinstance(m, bytes) else m for m in client.zrangebyscore(LANGUAGES_KEY, time.time(), "+inf")}


def _held(item: Watch, tab: str) -> str:
    return item.member() + TAB_SEP + tab


def watch(client: redis.Redis, item: Watch, tab: str = "") -> None:
    """Record that a tab (its websocket channel's name) is looking at a queue page, a job list
    or a job, for ``WATCH_TTL_S`` seconds (the tab refreshes it). The monitor reads this set once
    per tick and renders each thing watched once, so its work follows what is watched, not how
    many tabs watch it."""
    client.zadd(WATCH_KEY, {_held(item, tab): time.time() + WATCH_TTL_S})


def unwatch(client: redis.Redis, items: list[Watch], tab: str) -> None:
    """A tab closed: what it watched stops being watched now (not when its entry lapses), unless
    another tab watches it too."""
    if items:
        client.zrem(WATCH_KEY, *(_held(item, tab) for item in items))


def watched(client: redis.Redis) -> list[Watch]:
    """What some tab watches, each once."""
    now = time.time()
    client.zremrangebyscore(WATCH_KEY, "-inf", now)
    found: dict[Watch, None] = {}
    for raw in client.zrangebyscore(WATCH_KEY, now, "+inf"):
        member = raw.decode("utf-8")
        # The tab is last (a channel name holds no TAB_SEP); a member without one was written
        # by a web process of the version before, which kept one member per thing watched.
        head, sep, _ = member.rpartition(TAB_SEP)
        item = Watch.parse(head if sep else member)
        if item is not None:
            found[item] = None
    return list(found)
