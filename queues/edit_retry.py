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

from . import edit_growth

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
    # Keys in their stored order, as the job page and the edit page show the data: a diff sorted
    # otherwise reads as a different object. merge_patch keeps that order and appends new keys.
    return json.dumps(value, indent=2, ensure_ascii=False)


MAX_DIFF_LINE = 500  # characters of one diff line kept (a value of megabytes is one line)
WHOLE_DIFF_LINES = 400  # up to this many lines, the diff shows the whole value, not just hunks
HUNK_CONTEXT = 3  # lines kept around each change of a longer value


def diff_lines(before: Any, after: Any) -> list[str]:
    """A unified diff of the two values as pretty JSON, without the file header lines: the whole
    value when it is short (the operator sees the object they are changing, not pieces of it), the
    changed parts with a few lines around them when it is long; a long line is cut, saying how
    many characters were left out (previews and audit rows stay small whatever the data).

    Lines are compared without their trailing comma: a key added after the last one gives the
    line before it a comma, which is not a change of that value (shown once, as it is now)."""
    old, new = pretty(before).splitlines(), pretty(after).splitlines()
    longest = max(len(old), len(new))
    context = longest if longest <= WHOLE_DIFF_LINES else HUNK_CONTEXT
    # Exact matching costs the product of the lengths when lines repeat (an array of 200,000
    # zeros): only a short value gets it; a long one takes difflib's heuristic for popular lines.
    matcher = difflib.SequenceMatcher(
        None, [_uncomma(x) for x in old], [_uncomma(x) for x in new], autojunk=longest > WHOLE_DIFF_LINES
    )
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += [" " + line for line in new[j1:j2]]
                continue
            out += ["-" + line for line in old[i1:i2]]
            out += ["+" + line for line in new[j1:j2]]
    return [_cut(line) for line in out]


def _uncomma(line: str) -> str:
    return line[:-1] if line.endswith(",") else line


def _range(start: int, stop: int) -> str:
    """A hunk's line range as unified diffs write it (1-based; the length left out when 1)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def _cut(line: str) -> str:
    if len(line) <= MAX_DIFF_LINE:
        return line
    return f"{line[:MAX_DIFF_LINE]}… [+{len(line) - MAX_DIFF_LINE}]"  # the characters left out


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
    def growth(self) -> int:
        """Bytes the edit adds to the stored data (``queues.edit_growth``; negative: it shrinks)."""
        return edit_growth.growth(self.before_raw, self.after_raw) if self.changes else 0

    @property
    def changes(self) -> bool:
        return self.before != self.after

    def diff(self, redact: Callable[[Any], Any] = lambda v: v) -> list[str]:
        return diff_lines(redact(self.before), redact(self.after))
