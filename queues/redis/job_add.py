"""Adding a job, and duplicating one, exactly as Node's ``Queue.add`` does.

``Queue.add`` picks one of BullMQ's three add scripts by the options (``addDelayedJob`` when
``delay > 0``, else ``addPrioritizedJob`` when ``priority``, else ``addStandardJob``) and
hands it the same packed arguments; so do we. Each script is wrapped unchanged (see
``queues.redis.bullmq_scripts``) with a few lines that tell the caller whether the job was created
or BullMQ answered with an existing one: the same custom ``jobId`` (BullMQ's "duplicated") or
a deduplication hit (its "deduplicated"). Node gives the caller the existing job in both
cases without saying so; an operator needs to know.

A duplicate copies the source job's name, data and options *from Redis* (never from a page,
which is redacted and capped); it gets a new id, and loses what ties the source to its place
(a custom id, a scheduler, a parent).
"""

from __future__ import annotations

import time

import msgpack
import redis

from ..errors import NotAJob
from ..job_add import CREATED, DEDUPLICATED, DUPLICATED, AddOutcome, SourceJob, check_data, copy_of
from ..job_options import InvalidJob, NewJob
from ..keys import QueueRef
from ..messages import _
from ..safe_json import loads_or
from ..text import to_text
from .bullmq_scripts import as_function, lua_script
from .jobs import job_state

_OUTCOME = """
-- KEYS: the add script's own; ARGV[1..3] its own; ARGV[4] the custom id or "", ARGV[5] the queue
-- key prefix. Returns {code, id}: 1 created, 0 an existing job with that id, 2 deduplicated
-- against the job returned, or {BullMQ's negative error code, ""}.
local custom = ARGV[4]
local nextId = custom
if custom == "" then nextId = tostring((tonumber(redis.call("GET", KEYS[%(id_key)d])) or 0) + 1) end
local existed = custom ~= "" and redis.call("EXISTS", ARGV[5] .. custom) == 1
local result = add_job(KEYS, {ARGV[1], ARGV[2], ARGV[3]})
if type(result) == "number" and result < 0 then return {result, ""} end
result = tostring(result)
if existed then return {0, result} end
if result ~= nextId then return {2, result} end
return {1, result}
"""

# (script file, the queue keys it takes in order, index of the ``id`` key among them)
_KINDS = {
    "standard": (
        "addStandardJob-9.lua",
        ("wait", "paused", "meta", "id", "completed", "delayed", "active", "events", "marker"),
        4,
    ),
    "delayed": ("addDelayedJob-6.lua", ("marker", "meta", "id", "delayed", "completed", "events"), 3),
    "prioritized": (
        "addPrioritizedJob-9.lua",
        ("marker", "meta", "id", "prioritized", "delayed", "completed", "active", "events", "pc"),
        3,
    ),
}
ADD_SCRIPTS = {
    kind: lua_script(as_function("add_job", filename) + _OUTCOME % {"id_key": id_key})
    for kind, (filename, _, id_key) in _KINDS.items()
}


def add_kind(opts: dict) -> str:
    """Which of BullMQ's add scripts Node's ``addJob`` would call for these options."""
    if (opts.get("delay") or 0) > 0:
        return "delayed"
    if opts.get("priority"):
        return "prioritized"
    return "standard"


def add_call(queue: QueueRef, job: NewJob, *, now_ms: int) -> tuple[str, list[str], list]:
    """(kind, KEYS, ARGV) as Node's ``addJobToTransaction`` builds them."""
    kind = add_kind(job.opts)
    _, key_names, _ = _KINDS[kind]
    dedup_key = queue.key(f"de:{job.deduplication_id}") if job.deduplication_id else None
    packed = msgpack.packb(
        [queue.base, job.job_id, job.name, now_ms, None, None, None, None, dedup_key], use_bin_type=True
    )
    args = [packed, job.data_json, msgpack.packb(job.stored_opts(), use_bin_type=True), job.job_id, queue.base]
    return kind, [queue.key(k) for k in key_names], args


def add_job(client: redis.Redis, *, queue: QueueRef, job: NewJob, schema: dict | None = None) -> AddOutcome:
    """Add ``job`` (checked by ``queues.job_options.new_job``) with BullMQ's own add script,
    if its data passes the queue's ``schema`` (else ``DataRefused``, and nothing is written)."""
    check_data(schema, job.data_json)
    if not client.exists(queue.key("meta")):
        raise InvalidJob(
            _("There is no queue '{name}' (no meta key); Queuewatch never creates a queue.", name=queue.name)
        )
    kind, keys, args = add_call(queue, job, now_ms=int(time.time() * 1000))
    code, job_id = ADD_SCRIPTS[kind](keys=keys, args=args, client=client)
    code, job_id = int(code), to_text(job_id)
    if code < 0:
        raise InvalidJob(f"BullMQ refused the job (code {code}).")
    return AddOutcome(job_id, {1: CREATED, 0: DUPLICATED, 2: DEDUPLICATED}[code])


STORED_TO_OPTION = {"de": "deduplication"}


def read_source(client: redis.Redis, *, queue: QueueRef, job_id: str) -> SourceJob | None:
    """The job to copy; None when it is gone; ``NotAJob`` when the id names one of the queue's
    own keys (a scheduler's ``repeat:<id>`` hash is a hash with a name, but no job: copying it
    made a job of a scheduler's template; a stream or list under the queue is not even a hash)."""
    kind = to_text(client.type(queue.job_key(job_id)))
    if kind == "none":
        return None
    if kind != "hash" or job_state(client, queue, job_id)[0] == "unknown":
        raise NotAJob(job_id)
    name, data, opts = client.hmget(queue.job_key(job_id), ["name", "data", "opts"])
    if name is None and data is None:
        return None
    stored = loads_or(to_text(opts, "{}"), {})
    stored = stored if isinstance(stored, dict) else {}
    return SourceJob(
        name=to_text(name),
        data_json=to_text(data, "{}"),
        opts={STORED_TO_OPTION.get(k, k): v for k, v in stored.items()},
    )


def duplicate_job(
    client: redis.Redis, *, queue: QueueRef, job_id: str, schema: dict | None = None
) -> AddOutcome | None:
    """Add a copy of job ``job_id`` (read from Redis) to its queue; ``None`` if it is gone."""
    source = read_source(client, queue=queue, job_id=job_id)
    if source is None:
        return None
    return add_job(client, queue=queue, job=copy_of(source), schema=schema)
