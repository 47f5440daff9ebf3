"""The monitor's state document (every queue's latest figures, for the readers that must not read
the monitored Redis themselves: /metrics, health checks, alert rules) and its order document
(``dashboard.core.order_document``), in the dashboard Redis.

The state document is a hash: one field per queue, so a monitor rewrites only the queues whose
figures changed.

At 10,000 queues the document is ~13 MB. Written whole, it cost the monitor's loop ~300 ms at
each write (joining, signing and sending 13 MB, twice a tick), nearly half of its time, while a
tick changes the figures of a few thousand queues. In the hash, each queue's entry is a field of
its own (``queue_field``), signed on its own and bound to the key and field (one entry cannot be
replayed as another queue's); ``head`` holds when and by whom the document was taken, and
``generation`` names the write the hash is at. A monitor writes only the fields that changed
since its last write, and only if the hash is still at that write's generation (``WRITE_CHANGES``,
one script: atomic for readers); otherwise (the key expired, another monitor wrote, the last
write failed) it writes the whole document again. Readers get the same document as before
(``document``): the head's fields and ``queues``, the entries in the order of their fields.

The client is ``dashboard.core.dash_redis``'s (the one module that imports ``redis``).
"""

from __future__ import annotations

import functools
import json
import secrets
from collections.abc import Callable
from typing import Any

from dashboard.core import fast_json, order_document, signing
from dashboard.core.dash_redis import (
    LAST_LED_KEY,
    LAST_LED_TTL_S,
    DashboardRedis,
    get_json,
    is_wrong_type,
    put_json,
)
from queues.keys import QueueRef

STATE_KEY = "queuewatch:state"
STATE_TTL_S = 60  # gone when no monitor refreshes it: readers tell "no monitor" from "all zero"
# What ordering the overview and the API list needs of each queue, written beside it.
ORDER_KEY = "queuewatch:state:order"

HEAD = "head"
GENERATION = "generation"
QUEUE_PREFIX = "q:"
SEP = "\x1f"

# Lua limits how many values one ``unpack`` may pass to a command: fields go in chunks.
_CHUNK = 1000

# KEYS: the state hash, the order document, the last-led document. ARGV: the generation the hash
# must be at, the new generation, the hash's TTL, its head, the order document ('': left as it
# is), the last-led document, that document's TTL, the number of fields to remove, those fields,
# then field/value pairs. Returns 0 (nothing written) when the hash is not at the expected
# generation.
WRITE_CHANGES = f"""
local h = KEYS[1]
if redis.call('HGET', h, '{GENERATION}') ~= ARGV[1] then return 0 end
local removed = tonumber(ARGV[8])
local i = 9
local last = 8 + removed
while i <= last do
  local j = math.min(i + {_CHUNK - 1}, last)
  redis.call('HDEL', h, unpack(ARGV, i, j))
  i = j + 1
end
last = #ARGV
while i <= last do
  local j = math.min(i + {2 * _CHUNK - 1}, last)
  redis.call('HSET', h, unpack(ARGV, i, j))
  i = j + 1
end
redis.call('HSET', h, '{GENERATION}', ARGV[2], '{HEAD}', ARGV[4])
redis.call('EXPIRE', h, ARGV[3])
if ARGV[5] ~= '' then redis.call('SET', KEYS[2], ARGV[5], 'EX', ARGV[3]) end
redis.call('SET', KEYS[3], ARGV[6], 'EX', ARGV[7])
return 1
"""


@functools.lru_cache(maxsize=1 << 16)  # the monitor names the fields of thousands of queues a write
def queue_field(queue: QueueRef) -> str:
    return field_of(queue.connection, queue.prefix, queue.name)


def field_of(connection: object, prefix: object, name: object) -> str:
    """The field of a queue's entry; any name (``/ : { "``, any length) gives its own field, in
    ASCII (``\\u`` escapes: a name with a lone surrogate could not be sent as UTF-8)."""
    return QUEUE_PREFIX + json.dumps([str(connection), str(prefix), str(name)])


def entry_field(entry: dict) -> str:
    """The field of an entry of a whole document (one of another shape still gets one)."""
    return field_of(entry.get("connection"), entry.get("prefix"), entry.get("name"))


def signed(key: str, field: str, text: str) -> str:
    return signing.sign(signing.DOCUMENT, text, bound_to=key + SEP + field)


def verified(key: str, field: str, value: bytes | str | None) -> str | None:
    return signing.verify(signing.DOCUMENT, value, bound_to=key + SEP + field)


def signed_fields(key: str, head_text: str, entries: dict[str, str]) -> dict[str, str]:
    """Every field of a whole document, signed (but ``generation``, which only decides whether a
    write of changes applies: a forged one makes the next write a whole one)."""
    fields = {field: signed(key, field, text) for field, text in entries.items()}
    fields[HEAD] = signed(key, HEAD, head_text)
    return fields


def change_args(key: str, *, changed: dict[str, str], removed: list[str]) -> list[str]:
    """``WRITE_CHANGES``' arguments from the removed fields' count on."""
    args = [str(len(removed)), *removed]
    for field, text in changed.items():
        args += (field, signed(key, field, text))
    return args


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def document(key: str, raw: dict) -> dict | None:
    """The document a hash read whole (``HGETALL``) holds: None without a head Queuewatch signed;
    entries that do not verify are left out (not written by Queuewatch)."""
    head_text = verified(key, HEAD, raw.get(HEAD.encode()) or raw.get(HEAD))
    if head_text is None:
        return None
    head = json.loads(head_text)
    if not isinstance(head, dict):
        return None
    queues = []
    for field, value in sorted((_text(f), v) for f, v in raw.items()):
        if field.startswith(QUEUE_PREFIX):
            text = verified(key, field, value)
            if text is not None:
                queues.append(fast_json.loads(text))
    return {**head, "queues": queues}


# --- writing ------------------------------------------------------------------------------------


def _last_led(head: dict) -> str:
    return signing.sign(
        signing.DOCUMENT,
        json.dumps({"at": head.get("taken_at"), "monitor": head.get("monitor")}),
        bound_to=LAST_LED_KEY,
    )


def publish_state(client: DashboardRedis, state: dict) -> None:
    """The state document (and its order document) from a whole document, replacing any other."""
    queues = [e for e in state.get("queues") or [] if isinstance(e, dict)]
    head = {k: v for k, v in state.items() if k != "queues"}
    publish_whole(
        client,
        head=head,
        entries={entry_field(e): json.dumps(e) for e in queues},
        order_text=order_document.order_text_of_entries(head, queues),
        generation=secrets.token_hex(8),
    )


def publish_whole(
    client: DashboardRedis, *, head: dict, entries: dict[str, str], order_text: str, generation: str
) -> None:
    """The whole state document (``entries``: each queue's entry as JSON, by its field), its order
    document and when a monitor last led, in one transaction: a reader never sees one without
    the other."""
    fields: dict[str, str] = signed_fields(STATE_KEY, json.dumps(head), entries)
    fields[GENERATION] = generation
    with client.pipeline(transaction=True) as pipe:
        pipe.delete(STATE_KEY)
        pipe.hset(STATE_KEY, mapping=fields)  # type: ignore[arg-type]  # redis-py's stub is narrower
        pipe.expire(STATE_KEY, STATE_TTL_S)
        put_json(pipe, ORDER_KEY, order_text, ex=STATE_TTL_S)
        pipe.set(LAST_LED_KEY, _last_led(head), ex=LAST_LED_TTL_S)
        pipe.execute()


def publish_changes(
    client: DashboardRedis,
    *,
    head: dict,
    changed: dict[str, str],
    removed: list[str],
    order_text: str | None,
    after: str,
    generation: str,
) -> bool:
    """Only the entries that changed (and those ``removed``) since the write of generation
    ``after``, with the head, the whole order document (unless None) and when a monitor last
    led; False, writing nothing, when the hash is not at that generation (then write it whole)."""
    args = [
        after,
        generation,
        STATE_TTL_S,
        signed(STATE_KEY, HEAD, json.dumps(head)),
        "" if order_text is None else signing.sign(signing.DOCUMENT, order_text, bound_to=ORDER_KEY),
        _last_led(head),
        LAST_LED_TTL_S,
        *change_args(STATE_KEY, changed=changed, removed=removed),
    ]
    try:
        return bool(client.eval(WRITE_CHANGES, 3, STATE_KEY, ORDER_KEY, LAST_LED_KEY, *args))
    except Exception as exc:
        if is_wrong_type(exc):
            return False  # something else is stored there: the whole write replaces it
        raise


# --- reading ------------------------------------------------------------------------------------


def _unless_wrong_type(read: Callable[[], Any]) -> Any:
    """``read()``, or None when the key holds another type of value (not written by Queuewatch)."""
    try:
        return read()
    except Exception as exc:
        if is_wrong_type(exc):
            return None
        raise


def read_state(client: DashboardRedis) -> dict | None:
    """The state document (``document``); None when there is none, or when what is there was not
    written by Queuewatch."""
    raw = _unless_wrong_type(lambda: client.hgetall(STATE_KEY))
    return None if raw is None else document(STATE_KEY, raw)


def read_state_entry(client: DashboardRedis, queue: QueueRef) -> dict | None:
    """One queue's entry, without reading the others; None when the document or the entry is
    missing (or not written by Queuewatch)."""
    field = queue_field(queue)
    head, value = _unless_wrong_type(lambda: client.hmget(STATE_KEY, [HEAD, field])) or (None, None)
    if verified(STATE_KEY, HEAD, head) is None:
        return None
    text = verified(STATE_KEY, field, value)
    return None if text is None else fast_json.loads(text)


def read_state_head(client: DashboardRedis) -> dict | None:
    """When and by whom the state document was taken (and its connections), without its entries;
    None when there is none (or not written by Queuewatch)."""
    text = verified(STATE_KEY, HEAD, _unless_wrong_type(lambda: client.hget(STATE_KEY, HEAD)))
    return None if text is None else json.loads(text)


def read_order(client: DashboardRedis) -> dict | None:
    """The order document (``order_document``), parsed: read it with ``PublishedOrder``. Parsed
    with orjson (``fast_json``): ~0.8 MB at 10,000 queues, read by every sorted overview request."""
    text = get_json(client, ORDER_KEY)
    return None if text is None else fast_json.loads(text)
