"""What a dead letter's copy in its source queue carries: the allow-list of BullMQ job options
it keeps and the copy itself, the same for every source kind."""

from __future__ import annotations

from dataclasses import dataclass

# The BullMQ job options the copy carries over (as stored: ``kl`` is keepLogs, ``de``
# deduplication), an allow-list: anything else in a dead letter's ``opts`` (an unknown key such
# as ``prefix``, written by whoever produced the dead letter) is not copied into the source
# queue. Left out on purpose: ids (chosen here), delays (recomputed), scheduler and flow links,
# telemetry, the legacy debounce.
COPIED_OPTS = frozenset(
    {
        "attempts",
        "backoff",
        "lifo",
        "priority",
        "removeOnComplete",
        "removeOnFail",
        "stackTraceLimit",
        "kl",
        "keepLogs",
        "sizeLimit",
        "de",
    }
)


@dataclass(frozen=True)
class RedriveCopy:
    """What the copy in the source queue will carry, read from the dead-letter job."""

    name: str
    data_json: str
    opts: dict  # as stored (``de``, not ``deduplication``), only COPIED_OPTS
    timestamp_raw: str  # the dead letter's ``timestamp`` field, as stored (the guard compares it)
    dedup_id: str = ""
    due_ms: int | None = None  # the dead letter's due time if it is delayed
    unwrapped: str = ""  # the field of the dead letter's data the copy carries as its data
    envelope_missing: str = ""  # the field that should have been unwrapped, absent from this dead letter

    def placed(self, now_ms: int) -> tuple[str, dict]:
        """(BullMQ add script kind, options) as ``Queue.add`` would pick them at ``now_ms``."""
        opts = dict(self.opts)
        if self.due_ms is not None and self.due_ms > now_ms:
            opts["delay"] = self.due_ms - now_ms
            return "delayed", opts
        if opts.get("priority"):
            return "prioritized", opts
        return "standard", opts
