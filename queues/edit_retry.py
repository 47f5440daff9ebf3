"""Fix and replay: edit a failed job's data with a JSON merge patch, then retry it.

A permanent error (bad input) is not cured by retrying; correcting the data and replaying is.
Here: the merge patch (RFC 7386), the diff a preview shows and the ``EditPlan`` a confirmation
insists on, the same for every source kind. A Redis node applies a plan with one guarded,
atomic script: ``queues.redis.edit_retry``."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CHANGED = "changed"  # the data changed between preview and confirmation
UNCHANGED = "unchanged"  # the patch changes nothing


class PatchError(ValueError):
    """The edit cannot be made (data that is not JSON, a patch that is not one); says why."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def diff_lines(before: Any, after: Any) -> list[str]:
    """A unified diff of the two values as pretty JSON, without the file header lines."""
    lines = difflib.unified_diff(pretty(before).splitlines(), pretty(after).splitlines(), lineterm="", n=2)
    return [line for line in lines if not line.startswith(("---", "+++"))]


@dataclass(frozen=True)
class EditPlan:
    job_id: str
    state: str
    before_raw: str  # the stored data, exactly as read (the guard compares it)
    before: Any
    after: Any
    lifo: bool = False
    refusals: tuple = ()  # why the patched data does not pass the queue's schema (queues.job_schema)

    @property
    def fingerprint(self) -> str:
        """Names the stored data the preview was made from, so a confirmation can insist on it."""
        return hashlib.sha256(self.before_raw.encode("utf-8")).hexdigest()[:16]

    @property
    def after_raw(self) -> str:
        return json.dumps(self.after, separators=(",", ":"), ensure_ascii=False)

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self, redact: Callable[[Any], Any] = lambda v: v) -> list[str]:
        return diff_lines(redact(self.before), redact(self.after))
