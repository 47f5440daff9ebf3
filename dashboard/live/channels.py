"""The one module that knows live-update group names, element ids and message shapes, and the
``Publisher`` that fans fragments out (the fragments' cache and the other documents in the
dashboard Redis: ``dashboard.core.dash_redis``).

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
import logging
import threading
import time
from dataclasses import dataclass

from channels.layers import get_channel_layer
from django.conf import settings

from dashboard.core import signing
from dashboard.core.dash_redis import CACHE_PREFIX, SEP, DashboardRedis, DashboardRedisError, cache_fragment
from queues.keys import QueueRef

log = logging.getLogger("queuewatch.live")

OVERVIEW = "overview"
ALL = "all"  # every page: the connection-lost banner
BATCHED_GROUPS = {OVERVIEW: 0.5}  # group -> seconds between messages (see Publisher)
FRAGMENT_TYPE = "fragment.html"  # consumer method fragment_html


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


def job_operators_group(queue: QueueRef, job_id: str) -> str:
    """The job page's operators: they get the job's live part and its actions (which change with
    its state) in one message, instead of the job group's live part alone."""
    return job_group(queue, job_id) + "-ops"


# Sockets' sessions (dashboard.live.socket_sessions): every socket also joins the group of its
# login session and of its user, through which the end of a session reaches it at once. The
# session key is a credential: only a digest of it is a group name.
SESSION_ENDED_TYPE = "session.ended"  # consumer method session_ended: close now
SESSION_CHANGED_TYPE = "session.changed"  # consumer method session_changed: check the session again
GRANTS_CHANGED_TYPE = "grants.changed"  # consumer method grants_changed: connect again (socket_grants)


def session_group(session_key: str) -> str:
    return f"session-{hashlib.sha256(session_key.encode()).hexdigest()[:32]}"


def user_group(user_id: int) -> str:
    return f"user-{int(user_id)}"


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


JOB_ACTIONS_ID = "job-actions"


def read_stamp() -> int:
    """When a job page's state was read (epoch ms, taken just before the read), stamped on its
    live part and actions (``data-read-at``). Two writers swap those elements: the monitor's
    websocket message and an action's own HTTP response, which can arrive in either order; the
    page keeps the later read (static/queuewatch.js), so a response read before the job failed
    again never replaces the monitor's newer "failed" view. Web and monitor hosts' clocks only
    need to agree to within the gap between two reads."""
    return time.time_ns() // 1_000_000


def task_group(task_id: int) -> str:
    """Progress of one background bulk task (a database id, so no hashing needed)."""
    return f"task-{int(task_id)}"


def task_progress_id(task_id: int) -> str:
    return f"task-{int(task_id)}-progress"


def fragment_message(html: str) -> dict:
    """The channel-layer message carrying ``html`` to a group's tabs (signed: ``signing``)."""
    return {"type": FRAGMENT_TYPE, "html": signing.sign(signing.FRAGMENT, html)}


def fragment_of(message: dict) -> str | None:
    """The html a ``fragment_message`` carries; None when its signature does not verify."""
    return signing.verify(signing.FRAGMENT, message.get("html"))


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

    def __init__(self, client: DashboardRedis):
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
                                await self.layer.group_send(group, fragment_message(html))
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
                cache_fragment(pipe, entry.group, entry.element_id, entry.html)
        for group in {e.group for e in entries if e.html is not None}:
            pipe.expire(CACHE_PREFIX + group, 24 * 3600)
        try:
            pipe.execute()
        except DashboardRedisError:
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
