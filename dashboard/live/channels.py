"""The one module that knows live-update group names, message shapes and where the latest
fragments are kept.

The monitor renders each changed fragment once and sends it to a group; consumers relay it;
htmx's ws extension swaps it in by element id. Messages are whole elements (never deltas), so
a dropped message heals with the next one, and every (re)connect gets the latest fragments from
the cache below.

Group names are built here only: a short hash of the queue identity (channels group names must
be ASCII and short; queue names and job ids may be anything).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass

import redis
from channels.layers import get_channel_layer
from django.conf import settings

from queues.keys import QueueRef

log = logging.getLogger("queuewatch.live")

OVERVIEW = "overview"
ALL = "all"  # every page: the connection-lost banner
BATCHED_GROUPS = {OVERVIEW: 0.5}  # group -> seconds between messages (see Publisher)
FRAGMENT_TYPE = "fragment.html"  # consumer method fragment_html
CACHE_PREFIX = "queuewatch:frag:"
WATCH_KEY = "queuewatch:watch"
WATCH_TTL_S = 90
SEP = "\x1f"
TAB_SEP = "\x1e"  # between a watch's member and the tab (websocket channel) that holds it


def language_group(group: str, language: str) -> str:
    """The group of ``group``'s fragments rendered in ``language``: the group itself for the
    default language, ``<group>.<language>`` for the others (see ``fragments.LocalizedHtml``)."""
    return group if language == settings.LANGUAGE_CODE else f"{group}.{language}"


def base_group(group: str) -> str:
    return group.split(".", 1)[0]


def digest(*parts: str) -> str:
    return hashlib.sha1(SEP.join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def queue_id(queue: QueueRef) -> str:
    """Stable element-id fragment for a queue."""
    return digest(queue.connection, queue.prefix, queue.name)


def queue_group(queue: QueueRef) -> str:
    return f"queue-{queue_id(queue)}"


def list_group(queue: QueueRef, state: str) -> str:
    return f"list-{queue_id(queue)}-{state}"


def job_group(queue: QueueRef, job_id: str) -> str:
    return f"job-{digest(queue.connection, queue.prefix, queue.name, job_id)}"


# Element ids of live fragments, used by templates (through filters) and by the monitor.
BANNER_ID = "live-banner"
FIRING_ALERTS_ID = "firing-alerts"


def row_id(queue: QueueRef) -> str:
    return f"row-{queue_id(queue)}"


def queue_live_id(queue: QueueRef) -> str:
    return f"live-{queue_id(queue)}"


def job_table_id(queue: QueueRef, state: str) -> str:
    return f"jobs-{queue_id(queue)}-{state}"


def job_live_id(queue: QueueRef, job_id: str) -> str:
    return job_group(queue, job_id) + "-live"


def task_group(task_id: int) -> str:
    """Progress of one background bulk task (a database id, so no hashing needed)."""
    return f"task-{int(task_id)}"


def task_progress_id(task_id: int) -> str:
    return f"task-{int(task_id)}-progress"



_clients: dict[str, redis.Redis] = {}


def dashboard_redis() -> redis.Redis:
    """A pooled client for Queuewatch's own Redis (one pool per URL, shared by threads)."""
    url = settings.QUEUEWATCH_DASHBOARD_REDIS_URL
    if url is None:
        raise redis.ConnectionError("no dashboard Redis is configured")
    if url not in _clients:
        _clients[url] = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return _clients[url]


@dataclass(frozen=True)
class CacheWrite:
    """Keep (or, with ``html`` None, drop) an element's fragment for tabs that connect later."""

    group: str
    element_id: str
    html: str | None


@dataclass(frozen=True)
class Send:
    """Send ``html`` (one or more elements) to every tab in ``group``."""

    group: str
    html: str


class Publisher:
    """Used by the monitor: send a fragment to a group once, and remember it for newcomers.
    Unchanged fragments are not re-sent.

    Cache writes and sends go through one long-lived event loop in a background thread, in
    order, without the monitor waiting for them: ``async_to_sync`` would build a loop per call,
    which cost more than rendering the fragment did, and a cache write per fragment cost the
    monitor a round trip each. A fragment is cached before it is sent, and consumers join their
    group before reading the cache, so a newcomer gets either the new fragment from the cache
    or the message that follows it."""

    def __init__(self, client: redis.Redis):
        self.client = client
        self.layer = get_channel_layer()
        self._last: dict[tuple[str, str], str] = {}
        self._pending: dict[str, dict[str, str]] = {}  # batched groups: element id -> html
        self._flush_scheduled: set[str] = set()
        self._last_batch: dict[str, float] = {}
        self._loop = asyncio.new_event_loop()
        self._outbox: asyncio.Queue | None = None
        ready = threading.Event()
        threading.Thread(target=self._run_loop, args=(ready,), name="publisher", daemon=True).start()
        ready.wait(5)

    def _run_loop(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._outbox = asyncio.Queue()
        sender = self._loop.create_task(self._sender())
        ready.set()
        self._loop.run_forever()
        sender.cancel()
        self._loop.run_until_complete(asyncio.gather(sender, return_exceptions=True))
        self._loop.close()

    async def _sender(self) -> None:
        while True:
            items = [await self._outbox.get()]
            while not self._outbox.empty():
                items.append(self._outbox.get_nowait())
            try:
                self._write_cache([item for item in items if isinstance(item, CacheWrite)])
                for item in items:
                    match item:
                        case Send(group=group, html=html):
                            try:
                                await self.layer.group_send(group, {"type": FRAGMENT_TYPE, "html": html})
                            except Exception:  # a failed send must not stop later ones; the cache still heals
                                log.warning("group_send to %s failed", group, exc_info=True)
            finally:
                for _ in items:
                    self._outbox.task_done()

    def _write_cache(self, entries: list[CacheWrite]) -> None:
        """Every fragment of one batch in one round trip, in order (the newest per element
        wins; ``None`` removes the element)."""
        if not entries:
            return
        pipe = self.client.pipeline(transaction=False)
        for entry in entries:
            if entry.html is None:
                pipe.hdel(CACHE_PREFIX + entry.group, entry.element_id)
            else:
                pipe.hset(CACHE_PREFIX + entry.group, entry.element_id, entry.html)
        for group in {e.group for e in entries if e.html is not None}:
            pipe.expire(CACHE_PREFIX + group, 24 * 3600)
        try:
            pipe.execute()
        except redis.RedisError:
            log.warning("could not cache %d fragments in the dashboard Redis", len(entries))

    def publish(self, group: str, element_id: str, html: str, *, force: bool = False) -> bool:
        """Send ``html`` to ``group``, and each of its other-language renders (a
        ``fragments.LocalizedHtml``) to that language's group."""
        sent = self._publish_one(group, element_id, html, force=force)
        for language, other in getattr(html, "translations", {}).items():
            self._publish_one(language_group(group, language), element_id, other, force=force)
        return sent

    def _publish_one(self, group: str, element_id: str, html: str, *, force: bool) -> bool:
        html = str(html)
        if not force and self._last.get((group, element_id)) == html:
            return False
        self._last[(group, element_id)] = html
        self._loop.call_soon_threadsafe(self._outbox.put_nowait, CacheWrite(group, element_id, html))
        if base_group(group) in BATCHED_GROUPS:
            self._loop.call_soon_threadsafe(self._batch_add, group, element_id, html)
        else:
            self._loop.call_soon_threadsafe(self._outbox.put_nowait, Send(group, html))
        return True

    # Groups with many members and many elements (the overview: every open overview tab, a
    # row per queue) get at most one message per window holding every element changed in it.
    # One message per changed row cost rows x tabs deliveries and overflowed channels_redis'
    # per-process capacity (it then drops messages silently) on busy systems.

    def _batch_add(self, group: str, element_id: str, html: str) -> None:
        pending = self._pending.setdefault(group, {})
        pending[element_id] = html  # a newer version of a row replaces the older one
        if group not in self._flush_scheduled:
            window = BATCHED_GROUPS[base_group(group)]
            delay = max(0.0, self._last_batch.get(group, 0.0) + window - self._loop.time())
            self._flush_scheduled.add(group)
            self._loop.call_later(delay, self._batch_flush, group)

    def _batch_flush(self, group: str) -> None:
        self._flush_scheduled.discard(group)
        pending = self._pending.pop(group, {})
        if pending:
            self._last_batch[group] = self._loop.time()
            self._outbox.put_nowait(Send(group, "".join(pending.values())))

    def uncache(self, group: str, element_id: str) -> None:
        """Stop keeping ``element_id`` of ``group`` (every language) for newcomers: the monitor
        no longer renders it, and a tab opened later must not be sent a stale copy (its page
        renders the element current; the monitor renders it again once someone watches)."""
        for language, _name in settings.LANGUAGES:
            other = language_group(group, language)
            self._last.pop((other, element_id), None)
            self._loop.call_soon_threadsafe(self._outbox.put_nowait, CacheWrite(other, element_id, None))

    def drain(self, timeout: float = 5.0) -> None:
        """Wait until every queued fragment has been handed to the channel layer."""
        future = asyncio.run_coroutine_threadsafe(self._outbox.join(), self._loop)
        try:
            future.result(timeout)
        except Exception:
            future.cancel()

    def close(self) -> None:
        self.drain()
        self._loop.call_soon_threadsafe(self._loop.stop)

    def forget(self) -> None:
        """Drop the change-detection memory (e.g. after a takeover) so everything is re-sent."""
        self._last.clear()


QUEUE_LIST_KEY = "queuewatch:queues:"
QUEUE_LIST_TTL_S = 60


def publish_queue_list(client: redis.Redis, connection: str, queues: list[QueueRef]) -> None:
    payload = json.dumps([[q.prefix, q.name] for q in queues])
    client.set(QUEUE_LIST_KEY + connection, payload, ex=QUEUE_LIST_TTL_S)


def read_queue_list(client: redis.Redis, connection: str) -> list[QueueRef] | None:
    raw = client.get(QUEUE_LIST_KEY + connection)
    if raw is None or not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
        return None
    return [QueueRef(connection, prefix, name) for prefix, name in json.loads(raw)]


EXACT_READS_CHANNEL = "queuewatch:exact-reads"


def request_exact_read(client: redis.Redis, queue: QueueRef) -> None:
    """Ask the leading monitor for an exact read of ``queue`` now: Queuewatch itself just
    changed it, maybe without an event (drain, obliterate, clean...). The monitor does the read
    (``dashboard.live.intake``); the web process only asks. Published, not stored: with no
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


def publish_state(client: redis.Redis, state: dict) -> None:
    # Expires if no monitor refreshes it, so readers can tell "no monitor" from "all zero".
    client.set(STATE_KEY, json.dumps(state), ex=60)


def read_state(client: redis.Redis) -> dict | None:
    raw = client.get(STATE_KEY)
    return json.loads(raw) if raw else None


WORKERS_KEY = "queuewatch:workers"


def publish_workers(client: redis.Redis, doc: dict, *, every_s: float) -> None:
    """Workers per queue (``queues.workers``), as the monitor last read them: ``{"taken_at",
    "queues": {queue_id: [worker dicts]}, "unknown": {connection: error}}``. Expires after three
    missed periods, so a page can tell "no monitor" (unknown) from "no workers"."""
    client.set(WORKERS_KEY, json.dumps(doc), ex=max(30, int(3 * every_s)))


def read_workers(client: redis.Redis) -> dict | None:
    raw = client.get(WORKERS_KEY)
    return json.loads(raw) if raw else None


def cached_fragments(client: redis.Redis, group: str) -> list[str]:
    return [v.decode("utf-8") for v in client.hgetall(CACHE_PREFIX + group).values()]


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
    def queue_page(cls, queue: QueueRef) -> "Watch":
        return cls(cls.QUEUE, queue, "")

    @classmethod
    def job_list(cls, queue: QueueRef, state: str) -> "Watch":
        return cls(cls.LIST, queue, state)

    @classmethod
    def job(cls, queue: QueueRef, job_id: str) -> "Watch":
        return cls(cls.JOB, queue, job_id)

    def member(self) -> str:
        return SEP.join((self.kind, self.queue.connection, self.queue.prefix, self.queue.name, self.target))

    @classmethod
    def parse(cls, member: str) -> "Watch | None":
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
