"""What a new job may be: its name, data and options, checked as BullMQ's ``Job.create`` and
``Queue.add`` check them, plus the few things Node accepts but that could only end badly here
(an id that names one of the queue's own keys, ``lifo`` on a prioritized job).

Options use BullMQ's own names (``delay``, ``priority``, ``attempts``, ``backoff``, ``jobId``,
``deduplication``, ``removeOnComplete``, ``removeOnFail``, ``lifo``) and are stored exactly as
Node stores them (``stored_opts``): ``attempts`` defaults to 0, a number ``backoff`` becomes
``{"type": "fixed", "delay": n}`` and ``deduplication`` is kept under its short name ``de``.

Framework-free: ``InvalidJob`` carries a message meant for the user.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .states import STATE_KEYS
from .text import MAX_SAFE_INTEGER
from .whole_numbers import MAX_DURATION_MS, MAX_DURATION_S, NotAWholeNumber, whole_number


class InvalidJob(ValueError):
    """A job BullMQ would refuse, or one that could not work; the message says why."""


PRIORITY_LIMIT = 2**21 - 1  # BullMQ's PRIORITY_LIMIT
MAX_NAME = 1000
MAX_JOB_ID = 1000
BACKOFF_TYPES = ("fixed", "exponential")  # BullMQ's built-in strategies; custom ones live in a worker
OPTION_NAMES = (
    "delay",
    "priority",
    "attempts",
    "backoff",
    "jobId",
    "deduplication",
    "removeOnComplete",
    "removeOnFail",
    "lifo",
)
# Suffixes of the queue's own keys (``<prefix>:<queue>:<suffix>``). A job id equal to one of
# them would name that key: BullMQ would answer "duplicated" for ``meta`` or ``events``.
RESERVED_IDS = frozenset(
    set(STATE_KEYS.values())
    | {"meta", "id", "events", "marker", "pc", "stalled", "stalled-check", "limiter", "repeat", "metrics", "de", "dn"}
)
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_job_id(job_id: str) -> str:
    """A custom job id as ``Queue.add`` would accept it (and not one of the queue's keys)."""
    if not isinstance(job_id, str) or not job_id.strip():
        raise InvalidJob("'jobId' must be a non-empty string.")
    if len(job_id) > MAX_JOB_ID:
        raise InvalidJob(f"'jobId' is longer than {MAX_JOB_ID} characters.")
    if _INTEGER.fullmatch(job_id):
        raise InvalidJob(
            f"'jobId' {job_id!r} is a plain integer: BullMQ refuses those (they would collide with "
            "the ids it generates). Add a letter, e.g. 'order-42'."
        )
    if ":" in job_id:
        raise InvalidJob("'jobId' cannot contain ':' (BullMQ reserves it for the ids of legacy repeatable jobs).")
    if job_id in RESERVED_IDS:
        raise InvalidJob(f"'jobId' {job_id!r} is reserved: it is the name of one of the queue's own keys or pages.")
    if _CONTROL.search(job_id):
        raise InvalidJob("'jobId' cannot contain control characters (line breaks, tabs, NUL…).")
    if any(part in (".", "..") for part in job_id.split("/")):
        raise InvalidJob("'jobId' cannot have '.' or '..' as a path segment: links would resolve it as a folder.")
    return job_id


def _whole(opts: dict, name: str, *, low: int = 0, high: int = MAX_SAFE_INTEGER) -> int | None:
    if name not in opts or opts[name] is None:
        return None
    try:
        return whole_number(opts[name], name, low=low, high=high)
    except NotAWholeNumber as exc:
        raise InvalidJob(str(exc)) from None


def _backoff(value: Any) -> dict:
    if isinstance(value, bool):
        raise InvalidJob('\'backoff\' must be a delay in ms or {"type": "fixed"|"exponential", "delay": ms}.')
    if isinstance(value, (int, float)):
        return {"type": "fixed", "delay": _whole({"backoff": value}, "backoff", high=MAX_DURATION_MS)}  # normalize
    if not isinstance(value, dict):
        raise InvalidJob('\'backoff\' must be a delay in ms or {"type": "fixed"|"exponential", "delay": ms}.')
    unknown = set(value) - {"type", "delay", "jitter"}
    if unknown:
        raise InvalidJob(f"'backoff' has unknown fields: {', '.join(sorted(unknown))} (use type, delay, jitter).")
    if value.get("type") not in BACKOFF_TYPES:
        raise InvalidJob("'backoff.type' must be 'fixed' or 'exponential' (custom strategies need a worker setting).")
    out = {"type": value["type"]}
    delay = _whole(value, "delay", high=MAX_DURATION_MS)
    if delay is not None:
        out["delay"] = delay
    if "jitter" in value:
        jitter = value["jitter"]
        if isinstance(jitter, bool) or not isinstance(jitter, (int, float)) or not 0 <= jitter <= 1:
            raise InvalidJob("'backoff.jitter' must be a number between 0 and 1.")  # BullMQ's own check
        out["jitter"] = jitter
    return out


def _keep(value: Any, name: str) -> Any:
    """removeOnComplete / removeOnFail: true/false, a count to keep, or {age (s), count}."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return _whole({name: value}, name)
    if isinstance(value, dict) and value and set(value) <= {"age", "count", "limit"}:
        return {k: _whole(value, k, high=MAX_DURATION_S if k == "age" else MAX_SAFE_INTEGER) for k in value}
    raise InvalidJob(f'\'{name}\' must be true, false, a number of jobs to keep, or {{"age": seconds, "count": n}}.')


# BullMQ 6.7's flags (types/deduplication-options.d.ts), run by its add scripts (vendored:
# queues/redis/bullmq_lua): ``reschedule`` moves a delayed owner to the new add's delay,
# ``keepLastIfActive`` keeps the latest add's payload while the owner runs and adds it after.
DEDUPLICATION_FLAGS = ("extend", "replace", "reschedule", "keepLastIfActive")


def _deduplication(value: Any) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not value["id"].strip():
        raise InvalidJob(
            '\'deduplication\' must be {"id": "…"} with an optional "ttl" in ms; the id must be a non-empty string.'
        )  # BullMQ: "Deduplication id must be provided"
    unknown = set(value) - {"id", "ttl", *DEDUPLICATION_FLAGS}
    if unknown:
        raise InvalidJob(
            f"'deduplication' has unknown fields: {', '.join(sorted(unknown))} "
            f"(use id, ttl, {', '.join(DEDUPLICATION_FLAGS)})."
        )
    out = {"id": value["id"]}
    ttl = _whole(value, "ttl", low=1, high=MAX_DURATION_MS)
    if ttl is not None:
        out["ttl"] = ttl
    for name in DEDUPLICATION_FLAGS:
        if name in value:
            if not isinstance(value[name], bool):
                raise InvalidJob(f"'deduplication.{name}' must be true or false.")
            out[name] = value[name]
    if (out.get("extend") or out.get("replace")) and "ttl" not in out:
        raise InvalidJob("'deduplication.extend' and 'replace' need a 'ttl'.")
    return out


@dataclass(frozen=True)
class NewJob:
    """A job to add, checked: its name, its data as JSON text and its options in BullMQ's names."""

    name: str
    data_json: str
    opts: dict

    @property
    def job_id(self) -> str:
        return self.opts.get("jobId", "")

    @property
    def deduplication_id(self) -> str:
        return (self.opts.get("deduplication") or {}).get("id", "")

    def stored_opts(self) -> dict:
        """The options as Node's ``Job`` stores them (``optsAsJSON``)."""
        stored = {"attempts": 0}
        for name, value in self.opts.items():
            stored["de" if name == "deduplication" else name] = value
        return stored


def new_job(*, name: Any, data: Any, opts: Any) -> NewJob:
    """Check a job as ``Queue.add(name, data, opts)`` would, and return it; ``InvalidJob`` otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidJob("The job needs a name (a non-empty string).")
    if len(name) > MAX_NAME:
        raise InvalidJob(f"The job name is longer than {MAX_NAME} characters.")
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise InvalidJob("'opts' must be a JSON object.")
    unknown = set(opts) - set(OPTION_NAMES)
    if unknown:
        raise InvalidJob(
            f"Unknown option(s): {', '.join(sorted(unknown))}. Queuewatch adds jobs with: {', '.join(OPTION_NAMES)}."
        )
    checked: dict = {}
    for key, high in (("delay", MAX_DURATION_MS), ("attempts", MAX_SAFE_INTEGER)):
        value = _whole(opts, key, high=high)
        if value is not None:
            checked[key] = value
    priority = _whole(opts, "priority", high=PRIORITY_LIMIT)
    if priority:
        checked["priority"] = priority
    if opts.get("backoff") is not None:
        checked["backoff"] = _backoff(opts["backoff"])
    if opts.get("jobId") not in (None, ""):
        checked["jobId"] = check_job_id(opts["jobId"])
    if opts.get("deduplication") is not None:
        checked["deduplication"] = _deduplication(opts["deduplication"])
    for key in ("removeOnComplete", "removeOnFail"):
        if opts.get(key) is not None:
            checked[key] = _keep(opts[key], key)
    if opts.get("lifo") is not None:
        if not isinstance(opts["lifo"], bool):
            raise InvalidJob("'lifo' must be true or false.")
        if opts["lifo"]:
            if priority:
                raise InvalidJob(
                    "'lifo' and 'priority' cannot be used together: a prioritized job is ordered by "
                    "its priority, so lifo would be silently ignored."
                )
            checked["lifo"] = True
    try:
        data_json = json.dumps({} if data is None else data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise InvalidJob("The data cannot hold NaN or Infinity (they are not JSON).") from None
    return NewJob(name=name, data_json=data_json, opts=checked)
