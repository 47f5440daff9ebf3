"""A job scheduler's template options: every option BullMQ 6.7 takes in one.

Node's ``JobSchedulerTemplateOptions`` is ``JobsOptions`` without ``jobId``, ``repeat``,
``delay`` and ``deduplication`` (the scheduler sets those on each iteration). The options a
plain job also has are checked as ``queues.job_options`` checks them; the rest here, as their
types in BullMQ's ``DefaultJobOptions``, ``BaseJobOptions`` and ``CompressableJobOptions`` say
(and the flow-failure flags are exclusive, as ``Job.validateOptions`` says). ``timestamp``,
``prevMillis`` and ``repeatJobKey`` are accepted because Node accepts them (each iteration
overrides them), so a template holding them can still be saved unchanged.

Framework-free; ``InvalidJob`` carries the message."""

from __future__ import annotations

from typing import Any

from .job_options import InvalidJob, NewJob, new_job
from .text import MAX_SAFE_INTEGER, MAX_TIMESTAMP_MS
from .whole_numbers import NotAWholeNumber, whole_number

# Checked by ``new_job`` as for any job.
JOB_OPTIONS = ("priority", "attempts", "backoff", "removeOnComplete", "removeOnFail", "lifo")
WHOLE_OPTIONS = ("keepLogs", "stackTraceLimit", "sizeLimit", "timestamp", "prevMillis")
TIME_OPTIONS = ("timestamp", "prevMillis")  # ms since 1970
FLOW_FLAGS = (
    "failParentOnFailure",
    "continueParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
)
TEMPLATE_OPTIONS = (*JOB_OPTIONS, *WHOLE_OPTIONS, *FLOW_FLAGS, "telemetry", "parent", "repeatJobKey")


def _whole(name: str, value: Any) -> int:
    high = MAX_TIMESTAMP_MS if name in TIME_OPTIONS else MAX_SAFE_INTEGER
    try:
        return whole_number(value, name, high=high)
    except NotAWholeNumber as exc:
        raise InvalidJob(str(exc)) from None


def _telemetry(value: Any) -> dict:
    if not isinstance(value, dict) or not set(value) <= {"metadata", "omitContext"}:
        raise InvalidJob('\'telemetry\' must be {"metadata": "…", "omitContext": true|false}.')
    if "metadata" in value and not isinstance(value["metadata"], str):
        raise InvalidJob("'telemetry.metadata' must be a string.")
    if "omitContext" in value and not isinstance(value["omitContext"], bool):
        raise InvalidJob("'telemetry.omitContext' must be true or false.")
    return dict(value)


def _parent(value: Any) -> dict:
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k] for k in ("id", "queue")):
        raise InvalidJob('\'parent\' must be {"id": "…", "queue": "<prefix>:<queue name>"}.')
    return dict(value)


def check_template(*, name: Any, data: Any, opts: dict) -> NewJob:
    """The template job (name, data, options in BullMQ's names), checked; ``InvalidJob`` if
    ``upsertJobScheduler`` would not take it or an iteration of it could not work."""
    unknown = set(opts) - set(TEMPLATE_OPTIONS)
    if unknown:
        raise InvalidJob(
            f"Unknown template option(s): {', '.join(sorted(unknown))}. A scheduler's template takes: "
            f"{', '.join(TEMPLATE_OPTIONS)} (jobId, delay, repeat and deduplication are the scheduler's own)."
        )
    template = new_job(name=name, data=data, opts={k: v for k, v in opts.items() if k in JOB_OPTIONS})
    checked = dict(template.opts)
    for key in WHOLE_OPTIONS:
        if opts.get(key) is not None:
            checked[key] = _whole(key, opts[key])
    flags = [key for key in FLOW_FLAGS if opts.get(key) is not None]
    for key in flags:
        if not isinstance(opts[key], bool):
            raise InvalidJob(f"'{key}' must be true or false.")
        checked[key] = opts[key]
    on = [key for key in flags if opts[key]]
    if len(on) > 1:
        raise InvalidJob(f"The following options cannot be used together: {', '.join(on)}.")  # BullMQ's words
    if opts.get("telemetry") is not None:
        checked["telemetry"] = _telemetry(opts["telemetry"])
    if opts.get("parent") is not None:
        checked["parent"] = _parent(opts["parent"])
    if opts.get("repeatJobKey") is not None:
        if not isinstance(opts["repeatJobKey"], str):
            raise InvalidJob("'repeatJobKey' must be a string.")
        checked["repeatJobKey"] = opts["repeatJobKey"]
    return NewJob(name=template.name, data_json=template.data_json, opts=checked)
