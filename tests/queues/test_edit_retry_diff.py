"""The edit-and-retry diff reads like the data the page shows above it: keys in their stored
order (not sorted), and the whole object when it is short (not pieces of it)."""

from __future__ import annotations

import difflib
import json

from queues.edit_retry import HUNK_CONTEXT, WHOLE_DIFF_LINES, diff_lines, merge_patch
from queues.jobs import prepare_payload
from queues.redact import Redactor


def test_keys_keep_their_stored_order_and_new_keys_come_last():
    stored = '{"to": "bad@", "template": "welcome", "attempt": {"n": 1, "at": "x"}, "cc": []}'
    before = json.loads(stored)
    after = merge_patch(before, {"to": "ok@example.com", "attempt": {"at": "y"}, "bcc": ["a@example.com"]})
    diff = diff_lines(before, after)
    shown_above = prepare_payload(stored, cap=65536, redactor=Redactor()).text
    # Every line of the data as the page shows it is in the diff, in the same order: as context
    # (" ", where a comma the next key added may differ), or as what is removed ("-").
    old_side = [line[1:].rstrip(",") for line in diff if line[:1] in (" ", "-")]
    assert old_side == [line.rstrip(",") for line in shown_above.splitlines()]
    assert diff.index('-  "to": "bad@",') < diff.index('   "template": "welcome",') < diff.index('-    "at": "x"')
    new_side = [line[1:] for line in diff if line[:1] in (" ", "+")]
    assert new_side == json.dumps(after, indent=2, ensure_ascii=False).splitlines()
    assert new_side.index('  "cc": [],') < new_side.index('  "bcc": [')  # an added key comes last
    # The key before it gains a comma: not a change (shown once, as context).
    assert '   "cc": [],' in diff and '-  "cc": []' not in diff


def test_the_diff_is_a_unified_diff():
    before, after = {"a": 1, "b": {"c": 2}}, {"a": 3, "b": {"c": 2}}
    ours = diff_lines(before, after)
    theirs = difflib.unified_diff(
        json.dumps(before, indent=2).splitlines(), json.dumps(after, indent=2).splitlines(), lineterm="", n=99
    )
    assert ours == [line for line in theirs if not line.startswith(("---", "+++"))]


def test_a_short_value_is_shown_whole_and_a_long_one_by_its_changes():
    short = {f"k{i}": i for i in range(20)}
    diff = diff_lines(short, {**short, "k19": "changed"})
    assert '   "k0": 0,' in diff  # far from the change, still shown: the whole object
    assert diff[0] == "@@ -1,22 +1,22 @@" and sum(line.startswith("@@") for line in diff) == 1

    long = {f"k{i}": i for i in range(WHOLE_DIFF_LINES + 10)}
    diff = diff_lines(long, {**long, "k100": "changed"})
    assert '   "k0": 0,' not in diff
    assert len(diff) == 1 + 2 * HUNK_CONTEXT + 2  # the hunk header, the change and its context


def test_a_long_value_of_repeated_lines_gives_its_hunk_without_comparing_every_pair():
    # 100,000 equal lines: exact matching would compare every pair (hours); the hunk is the end.
    before = {"items": [0] * 100_000}
    lines = diff_lines(before, {**before, "fixed": True})
    assert lines == ["@@ -100001,4 +100001,5 @@", "     0,", "     0", "   ],", '+  "fixed": true', " }"]
