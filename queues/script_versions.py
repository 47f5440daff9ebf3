"""Which BullMQ release wrote a queue, and whether Queuewatch's scripts may change it.

Queuewatch changes queues only through BullMQ's own Lua scripts, those of the newest release it
supports (``queues.redis.bullmq_scripts.SCRIPTS_VERSION``, vendored). The Node ``Queue`` records
its release in the queue's ``meta`` (``version``: ``bullmq:<x.y.z>``); Python bullmq records none.

* no record (Python, or a queue no Node ``Queue`` opened): the newest supported scripts run;
* a release up to the supported one (any patch of the supported minor included: BullMQ keeps
  its data layout within a minor release): they run too;
* a newer minor or major release: its scripts, and the data they leave, may differ from what
  ours know, so every change through a script is refused with that reason instead of guessed
  (``UnsupportedRelease``), and the queue's settings say so.
"""

from __future__ import annotations

import re

from .errors import QueuewatchError
from .messages import _

VERSION_RE = re.compile(r"^(?:bullmq:)?(\d+)\.(\d+)\.(\d+)")


def parse_release(recorded: str | None) -> tuple[int, int, int] | None:
    """``bullmq:6.7.0`` → ``(6, 7, 0)``; ``None`` for no record or one that is not a release."""
    found = VERSION_RE.match(recorded or "")
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def newer_than_supported(recorded: str | None, supported: tuple[int, int, int]) -> bool:
    release = parse_release(recorded)
    return release is not None and release[:2] > supported[:2]


def release_text(release: tuple[int, int, int]) -> str:
    return ".".join(map(str, release))


class UnsupportedRelease(QueuewatchError):
    """The queue was written by a BullMQ release newer than the scripts Queuewatch runs."""

    def __init__(self, recorded: str, supported: tuple[int, int, int]):
        self.recorded, self.supported = recorded, supported
        self.message = _(
            "This queue was last opened by {recorded}, newer than BullMQ {supported} whose scripts "
            "Queuewatch runs: changes to it are refused rather than guessed. Upgrade Queuewatch.",
            recorded=recorded,
            supported=release_text(supported),
        )
        super().__init__(str(self.message))


def check_release(recorded: str | None, supported: tuple[int, int, int]) -> None:
    """Raise ``UnsupportedRelease`` when a script of ``supported`` may not change this queue."""
    if newer_than_supported(recorded, supported):
        raise UnsupportedRelease(str(recorded), supported)
