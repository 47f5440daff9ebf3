"""What a redrive (a dead letter moved back to its source queue) answers, for every source kind:
its outcome codes, the ids its copy may take, and its messages from a script's or a
transaction's reply (``[code, …]``, the composed Redis script's shape)."""

from __future__ import annotations

import re

from .actions import DONE, MISSING, ActionResult, remove_outcome
from .job_options import RESERVED_IDS
from .keys import QueueRef
from .messages import Joined, _
from .quantities import duration_message
from .redrive_copy import RedriveCopy
from .text import to_int, to_text

TARGET_EXISTS = "target_exists"  # a job with the copy's id is still waiting/active/... in the source
DEDUPLICATED = "deduplicated"  # the deduplication id is held in the source by another job
CHANGED = "changed"  # the job was replaced between read and move
NO_SOURCE = "no_source"  # no source queue could be determined
UNKNOWN_TARGET = "unknown_target"  # the source queue does not exist (no <prefix>:<queue>:meta)
NOT_ENVELOPED = "not_enveloped"  # the dead letter lacks the data field its queue's envelope names
CROSS_SLOT = "cross_slot"  # on a Redis Cluster, the two queues are in different hash slots

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")


def redrive_job_id(*, dlq_name: str, job_id: str) -> str:
    """The deterministic id of a dead-letter job's copy when its own id cannot be kept.

    Never an integer string and without ``:`` (Node rejects most ids with ``:``): ``%`` and
    ``:`` are percent-escaped, which keeps the mapping one-to-one."""
    escaped = job_id.replace("%", "%25").replace(":", "%3A")
    return f"redrive-{dlq_name}-{escaped}"


def keepable_id(job_id: str) -> bool:
    """Whether the dead letter's id is a custom id Node's ``Queue.add`` would accept as such
    (a plain integer is one BullMQ generated, and refused as a custom id)."""
    return (
        bool(job_id.strip())
        and len(job_id) <= 1000
        and not _INTEGER.fullmatch(job_id)
        and ":" not in job_id
        and job_id not in RESERVED_IDS
    )


def candidate_ids(*, dlq_name: str, job_id: str, timestamp_raw: str) -> list[str]:
    """The ids the copy may get, in order of preference (see the module docstring)."""
    fallback = redrive_job_id(dlq_name=dlq_name, job_id=job_id)
    ids = [job_id] if keepable_id(job_id) else []
    ids.append(fallback)
    if timestamp_raw:
        ids.append(f"{fallback}-{timestamp_raw.replace('%', '%25').replace(':', '%3A')}")
    return ids


def kept_items(
    copy: RedriveCopy, *, job_id: str, new_id: str, taken: list[str], now_ms: int
) -> tuple[list[str], list[str]]:
    """(what the copy kept, as counter names; the same in words) for a moved job."""
    kind, opts = copy.placed(now_ms)
    names: list[str] = []
    words: list[str] = []
    if new_id == job_id:
        names.append("job_id")
        words.append(_("its id"))
    else:
        names.append("new_id")
        reasons = [
            _("{id} is taken by a {state} job", id=taken[i], state=taken[i + 1]) for i in range(0, len(taken), 2)
        ]
        words.append(
            _("a new id ({why})", why=Joined(reasons, "; "))
            if reasons
            else _("a new id (a number BullMQ generated is not kept)")
        )
    if copy.unwrapped:
        names.append("unwrapped")
        words.append(_("the {field} field of its data as its data", field=copy.unwrapped))
    if copy.dedup_id:
        names.append("deduplication")
        words.append(_("deduplication id {id}", id=copy.dedup_id))
    if kind == "prioritized" or (opts.get("priority") and kind == "delayed"):
        names.append("priority")
        words.append(_("priority {n}", n=opts["priority"]))
    if kind == "delayed":
        names.append("delay")
        delay = to_int(opts["delay"])
        due = duration_message(delay / 1000) if delay is not None else str(opts["delay"])
        words.append(_("its delay (due in {due})", due=due))
    if opts.get("lifo") and not opts.get("priority"):
        names.append("lifo")
        words.append(_("lifo"))
    return names, words


def envelope_refusal(job_id: str, copy: RedriveCopy, *, dlq: QueueRef) -> ActionResult | None:
    """A dead letter without the field its queue's envelope holds the original data in is left
    where it is: copied whole, it would only fail in the source queue."""
    if not copy.envelope_missing:
        return None
    return ActionResult(
        job_id,
        NOT_ENVELOPED,
        _(
            "Job {id} was not moved: its data has no field {field}, where the dead letters of {dlq} keep the "
            "original data. It was left in {dlq}.",
            id=job_id,
            field=copy.envelope_missing,
            dlq=dlq.name,
        ),
    )


def redrive_outcome(
    job_id: str, reply: list, *, dlq: QueueRef, source: QueueRef, copy: RedriveCopy, now_ms: int
) -> ActionResult:
    code = int(reply[0])
    if code == 1:
        new_id = to_text(reply[1])
        taken = [to_text(x) for x in reply[2:]]
        names, words = kept_items(copy, job_id=job_id, new_id=new_id, taken=taken, now_ms=now_ms)
        return ActionResult(
            job_id,
            DONE,
            _(
                "Job {id} moved from {dlq} to {source} as job {new}; kept: {kept}.",
                id=job_id,
                dlq=dlq.name,
                source=source.name,
                new=new_id,
                kept=Joined(words, ", "),
            ),
            kept=tuple(names),
            moved_to=(source, new_id),
        )
    if code == -100:
        return ActionResult(
            job_id,
            TARGET_EXISTS,
            _(
                "Job {id} was not moved: {source} still holds job {other} ({state}), an earlier copy of the same work. "
                "It was left in {dlq}; redrive it again once that job has finished.",
                id=job_id,
                source=source.name,
                other=to_text(reply[1]),
                state=to_text(reply[2]),
                dlq=dlq.name,
            ),
        )
    if code == -104:
        return ActionResult(
            job_id,
            TARGET_EXISTS,
            _(
                "Job {id} was not moved: every id its copy could take in {source} is taken by an earlier copy. It was "
                "left in {dlq}.",
                id=job_id,
                source=source.name,
                dlq=dlq.name,
            ),
        )
    if code == -103:
        return ActionResult(
            job_id,
            DEDUPLICATED,
            _(
                "Job {id} was not moved: its deduplication id {dedup} is held in {source} by job {holder}, so BullMQ "
                "would not add it. It was left in {dlq}.",
                id=job_id,
                dedup=copy.dedup_id,
                source=source.name,
                holder=to_text(reply[1]),
                dlq=dlq.name,
            ),
        )
    if code == -3:
        return ActionResult(
            job_id, CHANGED, _("Job {id} changed while being redriven; it was left in {dlq}.", id=job_id, dlq=dlq.name)
        )
    if code == -1:
        return ActionResult(job_id, MISSING, _("Job {id} no longer exists.", id=job_id))
    if code == -102:
        return ActionResult(
            job_id,
            UNKNOWN_TARGET,
            _(
                "Job {id} was not moved: there is no queue {source} (it has no meta key), so it was left in {dlq}. "
                "Check QUEUEWATCH_DLQ_MAP.",
                id=job_id,
                source=source.name,
                dlq=dlq.name,
            ),
        )
    return remove_outcome(job_id, code)


def cross_slot_refusal(job_id: str, *, dlq: QueueRef, source: QueueRef) -> ActionResult:
    """A redrive a Redis Cluster cannot run: the composed script names keys of both queues, and
    a Cluster runs a script only on keys of one hash slot (it would fail with ``CROSSSLOT``)."""
    return ActionResult(
        job_id,
        CROSS_SLOT,
        _(
            "Job {id} was not moved: a redrive moves it from {dlq} to {source} in one atomic step, which on a Redis "
            "Cluster needs both queues in the same hash slot, and theirs differ. Give both queues the same hash tag "
            "(for example the prefix {example}, or one tag in both names) so they share a slot. It was left in {dlq}.",
            id=job_id,
            dlq=dlq.name,
            source=source.name,
            example="{bull}",
        ),
    )
