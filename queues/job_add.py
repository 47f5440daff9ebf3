"""Adding a job, and duplicating one: what every source kind checks and reports.

The data check against the queue's schema, the outcome of an add (created, or an existing job
BullMQ answered with), and what a duplicate copies of its source job (name, data, options; never
its id or place). A Redis node adds with BullMQ's own add scripts: ``queues.redis.job_add``."""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import job_schema
from .job_options import InvalidJob, NewJob
from .messages import _
from .safe_json import MAX_DEPTH, JsonTooDeep, NonFiniteNumber, parse_json, strict_loads

CREATED, DUPLICATED, DEDUPLICATED = "created", "duplicated", "deduplicated"


class DataRefused(InvalidJob):
    """The job's data does not pass the queue's schema (``queues.job_schema``); ``reasons``
    says where and why, a few at most."""

    def __init__(self, reasons: list):
        self.reasons = reasons
        super().__init__(job_schema.refusal(reasons))


def check_data(schema: dict | None, data_json: str) -> None:
    """``DataRefused`` unless the data passes ``schema`` (no schema: everything passes)."""
    if schema is None:
        return
    ok, data = parse_json(data_json)
    reasons = job_schema.validate(schema, data) if ok else [_("The data is not JSON, so it cannot pass a schema.")]
    if reasons:
        raise DataRefused(reasons)


@dataclass(frozen=True)
class AddOutcome:
    job_id: str
    outcome: str  # CREATED, DUPLICATED or DEDUPLICATED

    @property
    def created(self) -> bool:
        return self.outcome == CREATED

    @property
    def message(self) -> str:
        if self.outcome == DUPLICATED:
            return _("Not added: job {id} already exists with that id (BullMQ keeps the existing job).", id=self.job_id)
        if self.outcome == DEDUPLICATED:
            return _("Not added: deduplicated against job {id}, which holds that deduplication id.", id=self.job_id)
        return _("Job {id} added.", id=self.job_id)


# Options a copy does not take from its source: its id and its place (scheduler, flow parent).
NOT_COPIED = frozenset(
    {
        "jobId",
        "repeat",
        "repeatJobKey",
        "prevMillis",
        "timestamp",
        "parent",
        "fpof",
        "cpof",
        "idof",
        "rdof",
        "tm",
        "omc",
    }
)


@dataclass(frozen=True)
class SourceJob:
    """A job as stored: name, data (raw JSON text) and options (in BullMQ's option names)."""

    name: str
    data_json: str
    opts: dict


def copy_of(source: SourceJob) -> NewJob:
    """The duplicate of a stored job: same name, data (byte for byte) and options, a new id.
    Options are copied as stored (Node accepted them: a custom backoff strategy, ``keepLogs``,
    ``stackTraceLimit``…), minus ``NOT_COPIED``. A scheduler's iteration also loses its ``delay``:
    BullMQ set it to the wait for the scheduler's next slot (``job-scheduler.js``), which is the
    scheduler's timing, not the job's, so a copy of it runs now instead of an interval late."""
    dropped = NOT_COPIED | {"delay"} if "repeatJobKey" in source.opts else NOT_COPIED
    return NewJob(
        name=source.name, data_json=source.data_json, opts={k: v for k, v in source.opts.items() if k not in dropped}
    )


def parse_data(text: str) -> object:
    """Job data typed into a form: JSON, with a message that says where it went wrong."""
    try:
        return strict_loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidJob(f"The data is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    except NonFiniteNumber as exc:
        raise InvalidJob(f"The data holds {exc}, which is not a JSON number.") from None
    except JsonTooDeep:
        raise InvalidJob(f"The data is nested more than {MAX_DEPTH} levels deep.") from None
