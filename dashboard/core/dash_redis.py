"""Queuewatch's own Redis (the "dashboard Redis"), in one module: the client, every document
kept there and the error its calls raise. Nothing else under ``dashboard/`` imports ``redis``
(tests/project/test_layers.py); the monitored Redis is reached through ``queues.sources``.

Documents: the queue list each connection's discovery found, the monitor's workers document
(its state and order documents are ``state_store``'s, through this client), watches (who looks
at what, indexed by queue), the languages viewed, the requests for an exact read and new
viewers' nudges (published, not stored), the cache of the latest live fragments (written by
``dashboard.live.channels.Publisher``) and capped leases (downloads and live sockets per user).
"""

from __future__ import annotations

import hashlib
import json
import secrets
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


def is_wrong_type(exc: Exception) -> bool:
    """Whether a call failed because the key holds another type of value (something other than
    Queuewatch wrote it): read as "nothing there", not as the dashboard Redis being down."""
    return isinstance(exc, redis.ResponseError) and str(exc).startswith("WRONGTYPE")


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
    put_json(client, key, json.dumps(doc), ex=ex)


def put_json(client: redis.Redis, key: str, text: str, *, ex: int) -> None:
    """``put_document`` of a document already serialised (``text`` must be valid JSON)."""
    client.set(key, signing.sign(signing.DOCUMENT, text, bound_to=key), ex=ex)


class DocumentStream:
    """A signed document written part by part: each part is ``APPEND``ed to a key of its own, and
    ``commit`` puts the signature in front and renames that key over ``key``. A report of tens of
    megabytes never exists whole in this process; readers see the previous document until the
    commit, and a writer that dies leaves a partial key that expires with ``ex``."""

    def __init__(self, client: redis.Redis, key: str, *, ex: int):
        self.client, self.key, self.ex = client, key, ex
        self.partial = f"{key}:writing:{secrets.token_hex(8)}"
        self.mac = signing.document_mac(key)
        client.set(self.partial, b"0" * signing.MAC_LENGTH, ex=ex)  # the signature's place

    def write(self, part: bytes) -> None:
        """Append ``part`` (UTF-8 JSON text: the parts together are the document)."""
        self.mac.update(part)
        self.client.append(self.partial, part)

    def commit(self) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.setrange(self.partial, 0, self.mac.hexdigest())
        pipe.rename(self.partial, self.key)
        pipe.expire(self.key, self.ex)
        pipe.execute()

    def abandon(self) -> None:
        try:
            self.client.delete(self.partial)
        except redis.RedisError:
            pass  # it expires


def get_document(client: redis.Redis, key: str):
    """The document ``put_document`` stored under ``key``; None when there is none, or when
    what is there was not written by Queuewatch (its signature does not verify)."""
    text = get_json(client, key)
    return None if text is None else json.loads(text)


def get_json(client: redis.Redis, key: str) -> str | None:
    """``get_document`` before parsing: the text ``put_json`` stored, for a caller that parses it
    its own way."""
    return signing.verify(signing.DOCUMENT, client.get(key), bound_to=key)


QUEUE_LIST_KEY = "queuewatch:queues:"
QUEUE_LIST_TTL_S = 60


# The last list published, kept long after the fresh one lapses: with the monitor stopped
# (crashed, or its lock held by someone who does not publish), web processes show it as stale
# instead of each scanning the monitored keyspace themselves.
LAST_QUEUE_LIST_KEY = "queuewatch:queues-last:"
LAST_QUEUE_LIST_TTL_S = 30 * 24 * 3600


def publish_queue_list(client: redis.Redis, connection: str, queues: list[QueueRef]) -> None:
    listed = [[q.prefix, q.name] for q in queues]
    put_document(client, QUEUE_LIST_KEY + connection, listed, ex=QUEUE_LIST_TTL_S)
    put_document(
        client,
        LAST_QUEUE_LIST_KEY + connection,
        {"at": int(time.time() * 1000), "queues": listed},
        ex=LAST_QUEUE_LIST_TTL_S,
    )


def read_queue_list(client: redis.Redis, connection: str) -> list[QueueRef] | None:
    found = get_document(client, QUEUE_LIST_KEY + connection)
    if found is None or not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
        return None
    return [QueueRef(connection, prefix, name) for prefix, name in found]


def read_last_queue_list(client: redis.Redis, connection: str) -> tuple[list[QueueRef], int] | None:
    """The last list a monitor published for ``connection`` and when (ms), however old; None
    when no monitor ever published one here (or it lapsed after ``LAST_QUEUE_LIST_TTL_S``)."""
    found = get_document(client, LAST_QUEUE_LIST_KEY + connection)
    if not isinstance(found, dict) or not settings.QUEUEWATCH_DASHBOARD_REDIS_URL:
        return None
    try:
        return [QueueRef(connection, str(p), str(n)) for p, n in found["queues"]], int(found["at"])
    except (KeyError, TypeError, ValueError):
        return None


EXACT_READS_CHANNEL = "queuewatch:exact-reads"


def request_exact_read(client: redis.Redis, queue: QueueRef, *, parents_elsewhere: bool = False) -> None:
    """Ask the leading monitor for an exact read of ``queue`` now: Queuewatch itself just
    changed it, maybe without an event (drain, obliterate, clean...). The monitor does the read
    (``dashboard.monitor.intake``); the web process only asks. Published, not stored: with no
    monitor leading nobody needs it (a new leader reads every queue when it starts), and it
    leaves no key behind in a dashboard Redis that is also the monitored one. With
    ``parents_elsewhere`` the monitor also reads the queues of that connection holding flow
    parents in waiting-children (``exact_read_parents``)."""
    client.publish(EXACT_READS_CHANNEL, json.dumps([queue.connection, queue.prefix, queue.name, parents_elsewhere]))


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
        connection, prefix, name = json.loads(message["data"])[:3]
        return QueueRef(str(connection), str(prefix), str(name))
    except (TypeError, ValueError):
        return None  # not one of ours: dropped


def exact_read_parents(message: dict) -> bool:
    """Whether a request on ``EXACT_READS_CHANNEL`` also asks for the queues whose flow parents
    the change may have released (``request_exact_read``)."""
    try:
        return json.loads(message["data"])[3] is True
    except (KeyError, IndexError, TypeError, ValueError):
        return False


# When a monitor last led, kept long after (written with each state document,
# ``state_store``): how long no monitor has led, for the banner and standby monitors
# (``dashboard.live.monitor_presence``), e.g. while someone else holds the leader lock.
LAST_LED_KEY = "queuewatch:monitor:last-led"
LAST_LED_TTL_S = 30 * 24 * 3600


def read_last_led(client: redis.Redis) -> dict | None:
    return get_document(client, LAST_LED_KEY)


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
    list (``kind="list"``, ``target`` its state), a job page (``kind="job"``, ``target`` the
    job id) or a queue's row on an overview page (``kind="row"``, no ``target``). Stored as one
    member of the ``WATCH_KEY`` sorted set; this class is the only place that knows that
    member's format."""

    QUEUE = "queue"
    LIST = "list"
    JOB = "job"
    ROW = "row"

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

    @classmethod
    def overview_row(cls, queue: QueueRef) -> Watch:
        return cls(cls.ROW, queue, "")

    def member(self) -> str:
        return SEP.join((self.kind, self.queue.connection, self.queue.prefix, self.queue.name, self.target))

    @classmethod
    def parse(cls, member: str) -> Watch | None:
        """The watch a set member stands for; ``None`` for anything malformed (a member
        written by another version, a job id that contains the separator)."""
        parts = member.split(SEP)
        if len(parts) != 5 or parts[0] not in (cls.QUEUE, cls.LIST, cls.JOB, cls.ROW):
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


# Watches, indexed by queue, so the monitor's work per refresh follows the queues and things
# watched, never the number of tabs (sockets) watching them:
#
# * ``WATCHED_QUEUES_KEY``: sorted set, member = a queue (``_queue_member``), score = when its
#   last watch lapses (s);
# * ``WATCH_KEY + ":q:" + digest(queue)``: sorted set, member = ``Watch.member()``, score = when
#   its last tab's watch lapses;
# * ``WATCH_KEY + ":t:" + digest(watch)``: sorted set of the tabs holding that watch (their
#   websocket channel names), score = each one's lapse time.
#
# Only a tab's own write or its close touches the tabs of a watch; the monitor reads the index
# and the watches of the queues it refreshes.
WATCHED_QUEUES_KEY = WATCH_KEY + ":queues"

# KEYS: index, the queue's watches, the watch's tabs. ARGV: queue member, watch member, tab,
# lapse time (s), key TTL (s).
_WATCH = """
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
redis.call('ZADD', KEYS[2], 'GT', ARGV[4], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[1])
return 1
"""
# Same KEYS; ARGV: queue member, watch member, tab, now (s). What lapses last decides each score,
# so a watch stays while another tab holds it, and a queue while any watch of it does.
_UNWATCH = """
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])
local tab = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
if #tab == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) else redis.call('ZADD', KEYS[2], 'XX', tab[2], ARGV[2]) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
local item = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if #item == 0 then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], 'XX', item[2], ARGV[1]) end
return 1
"""


def _queue_member(queue: QueueRef) -> str:
    return json.dumps([queue.connection, queue.prefix, queue.name])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _watch_keys(item: Watch) -> list[str]:
    member = item.member()
    return [
        WATCHED_QUEUES_KEY,
        WATCH_KEY + ":q:" + _digest(_queue_member(item.queue)),
        WATCH_KEY + ":t:" + _digest(member),
    ]


def watch(client: redis.Redis, items: Watch | list[Watch], tab: str = "") -> None:
    """Record that a tab (its websocket channel's name) is looking at a queue page, a job list,
    a job or overview rows, for ``WATCH_TTL_S`` seconds (the tab refreshes it); one round trip
    however many. The monitor renders each thing watched once, so its work follows what is
    watched, not how many tabs watch it."""
    lapse = time.time() + WATCH_TTL_S
    pipe = client.pipeline(transaction=False)
    for item in [items] if isinstance(items, Watch) else items:
        pipe.eval(_WATCH, 3, *_watch_keys(item), _queue_member(item.queue), item.member(), tab, lapse, WATCH_TTL_S)
    pipe.execute()


def unwatch(client: redis.Redis, items: list[Watch], tab: str) -> None:
    """A tab closed: what it watched stops being watched now (not when its entry lapses), unless
    another tab watches it too."""
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for item in items:
        pipe.eval(_UNWATCH, 3, *_watch_keys(item), _queue_member(item.queue), item.member(), tab, now)
    pipe.execute()


def watched_queues(client: redis.Redis) -> set[QueueRef]:
    """The queues something is watched of (one entry per queue, whatever the tabs)."""
    now = time.time()
    client.zremrangebyscore(WATCHED_QUEUES_KEY, "-inf", now)
    found = set()
    for raw in client.zrangebyscore(WATCHED_QUEUES_KEY, now, "+inf"):
        try:
            connection, prefix, name = json.loads(raw)
            found.add(QueueRef(str(connection), str(prefix), str(name)))
        except (TypeError, ValueError):
            continue  # not one of ours
    return found


def watches_of(client: redis.Redis, queues) -> dict[QueueRef, list[Watch]]:
    """What is watched of each of ``queues`` (each thing once), in one round trip."""
    queues = list(queues)
    if not queues:
        return {}
    now = time.time()
    pipe = client.pipeline(transaction=False)
    for q in queues:
        pipe.zrangebyscore(WATCH_KEY + ":q:" + _digest(_queue_member(q)), now, "+inf")
    found: dict[QueueRef, list[Watch]] = {}
    for q, members in zip(queues, pipe.execute(), strict=True):
        items = [w for w in (Watch.parse(m.decode("utf-8", "surrogatepass")) for m in members) if w and w.queue == q]
        if items:
            found[q] = items
    return found


def watched(client: redis.Redis) -> list[Watch]:
    """What some tab watches, each once."""
    return [item for items in watches_of(client, sorted(watched_queues(client))).values() for item in items]
