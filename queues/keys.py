"""Key names of a BullMQ queue.

Every key is ``<prefix>:<queue>:<suffix>``; job keys are ``<prefix>:<queue>:<jobId>``. Job ids may
contain ``:`` and prefixes may too (``{bull}``, ``app:bull``), so keys are always built from and
parsed against a known prefix and queue name, never split on ``:``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .states import STATE_KEYS  # which key holds each state: queues.states


@dataclass(frozen=True, order=True)
class QueueRef:
    """One queue: the named monitored connection, its key prefix and the queue name."""

    connection: str
    prefix: str
    name: str

    # The hash, computed once: a monitor of 10,000 queues looks queues up in its dicts and sets
    # all the time, and the generated __hash__ built a tuple for each lookup (py-spy: ~5 % of
    # the monitor's samples; half the cost of a lookup). An attribute, not a field (``fields``,
    # ``asdict``, ``==`` and ordering do not see it), computed again on unpickling: a str's
    # hash differs between processes.
    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.connection, self.prefix, self.name)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __reduce__(self):
        return (QueueRef, (self.connection, self.prefix, self.name))

    @property
    def base(self) -> str:
        return f"{self.prefix}:{self.name}:"

    def key(self, suffix: str) -> str:
        return self.base + suffix

    def job_key(self, job_id: str) -> str:
        return self.base + job_id

    def state_key(self, state: str) -> str:
        return self.base + STATE_KEYS[state]


def parse_job_key(
    full_key: str, prefixes: list[str], known_queues: Iterable[tuple[str, str]] = ()
) -> tuple[str, str, str] | None:
    """Split a full job key (as stored in ``parentKey`` or ``:dependencies``) into
    ``(prefix, queue, job_id)`` using the known prefixes; ``None`` when no prefix matches.

    The longest matching prefix wins, so ``app:bull`` beats ``app`` for ``app:bull:q:1``.
    A key alone cannot say where a queue name with ``:`` ends (Python BullMQ accepts such
    names), so ``known_queues`` (``(prefix, name)`` pairs, e.g. the discovered queues) is
    consulted first: the longest known name that the key continues with ``:`` wins. Without
    one, the queue name is taken to end at the first ``:``, which is right for every name
    Node BullMQ accepts.
    """
    colon_names = sorted(((p, n) for p, n in known_queues if ":" in n), key=lambda pn: len(pn[1]), reverse=True)
    for prefix in sorted(prefixes, key=len, reverse=True):
        head = prefix + ":"
        if not full_key.startswith(head):
            continue
        rest = full_key[len(head) :]
        for known_prefix, name in colon_names:
            if known_prefix == prefix and rest.startswith(name + ":") and len(rest) > len(name) + 1:
                return prefix, name, rest[len(name) + 1 :]
        queue, sep, job_id = rest.partition(":")
        if sep and queue and job_id:
            return prefix, queue, job_id
    return None
