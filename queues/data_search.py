"""Finding jobs by a field of their data: ``customer.id = cus_57e8`` within one state of a queue.

The query and the matching rule are the same for every source kind; a kind walks the state in
the order its job list shows, reads each job's data and asks ``DataQuery.matches``. A search is
bounded like the other scans: one step examines at most ``scan_limit`` jobs (and stops early
once ``MAX_MATCHES`` are found), says how many of the state's jobs it examined, and can be
continued from where it stopped (``DataSearch.next_offset``). Offsets are positions in the
list: jobs that move while a search goes on may be passed or seen twice, as when paging.

Matching is done on the data as shown (secrets redacted, ``queues.redact``), so a search never
tells whether a hidden value is what someone guessed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .jobs import JobSummary
from .messages import _

MAX_QUERY = 500  # characters of a query
MAX_MATCHES = 50  # matches one step shows before it stops (the next step goes on from there)
_PATH_PART = re.compile(r"^[^\s=]+$")


class BadQuery(ValueError):
    """A query that is not ``path = value``; its message says what to type."""


@dataclass(frozen=True)
class DataQuery:
    """A path into the data (object keys, or list positions) and the value it must hold."""

    path: tuple[str, ...]
    value: str

    @classmethod
    def parse(cls, text: str) -> DataQuery:
        """``customer.id = cus_57e8``; the value may be JSON-quoted (``name = "a = b"``). A key
        holding a dot cannot be named (keys are split at every dot)."""
        text = (text or "").strip()
        if len(text) > MAX_QUERY:
            raise BadQuery(str(_("A data query is at most {n} characters.", n=MAX_QUERY)))
        left, eq, right = text.partition("=")
        parts = tuple(p for p in left.strip().split("."))
        if not eq or not left.strip() or not all(p and _PATH_PART.match(p) for p in parts):
            raise BadQuery(str(_("Write a data query as a field path, “=” and a value, e.g. customer.id = cus_57e8.")))
        value = right.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            try:
                decoded = json.loads(value)
            except ValueError:
                decoded = None
            if isinstance(decoded, str):
                value = decoded
        return cls(parts, value)

    def text(self) -> str:
        return f"{'.'.join(self.path)} = {self.value}"

    def text_only(self) -> bool:
        """Whether only a value written exactly as ``value`` can match (a string, ``true`` or
        ``false``). A value that reads as a number or null may also match a number written
        otherwise (``4.50`` for ``4.5``) or a null, so a source narrowing its reads by text
        (PostgreSQL's ``#>>``) must not narrow those. Either way ``matches`` decides."""
        if self.value == "null":
            return False
        try:
            float(self.value)
        except ValueError:
            return True
        return False

    def matches(self, data: Any) -> bool:
        """Whether ``data`` holds the value at the path: a string equal to it, or a number,
        boolean or null written as it (``42``, ``4.5``, ``true``, ``null``)."""
        found = data
        for part in self.path:
            if isinstance(found, dict) and part in found:
                found = found[part]
            # ASCII digits only: "²" is a digit to Python but no number, and every kind reads
            # a position the same way (PostgreSQL's jsonb paths take ASCII integers).
            elif isinstance(found, list) and part.isascii() and part.isdigit() and int(part) < len(found):
                found = found[int(part)]
            else:
                return False
        if isinstance(found, str):
            return found == self.value
        if found is None or isinstance(found, bool):
            return json.dumps(found) == self.value
        if isinstance(found, int | float):
            try:
                return float(self.value) == float(found)
            except ValueError:
                return False
        return False


@dataclass
class DataSearch:
    """One step of a search: the matches it found, and how far through the state it got."""

    state: str
    query: DataQuery
    matches: list[JobSummary] = field(default_factory=list)
    start: int = 0  # the position in the state's list this step began at
    examined: int = 0  # positions passed from the start of the list (the step's start included)
    in_state: int = 0  # the state's size when this step read it
    too_large: int = 0  # jobs whose data was over the size searched (not matched)

    @property
    def complete(self) -> bool:
        return self.examined >= self.in_state

    @property
    def next_offset(self) -> int | None:
        return None if self.complete else self.examined
