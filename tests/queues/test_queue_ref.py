"""``QueueRef`` keeps its hash (dict and set lookups of 10,000 queues, many a second), and
nothing else about it changes: equality, order, fields, copies, and pickles made by another
process (whose str hashes differ)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys
from pathlib import Path

from queues.keys import QueueRef


def test_a_queue_ref_is_its_fields_for_equality_order_and_asdict():
    a, b = QueueRef("default", "bull", "a"), QueueRef("default", "bull", "b/:{c}")
    assert a == QueueRef("default", "bull", "a") and hash(a) == hash(QueueRef("default", "bull", "a"))
    assert a < b and sorted([b, a]) == [a, b] and a != ("default", "bull", "a")
    assert dataclasses.asdict(b) == {"connection": "default", "prefix": "bull", "name": "b/:{c}"}
    assert [f.name for f in dataclasses.fields(a)] == ["connection", "prefix", "name"]
    assert repr(a) == "QueueRef(connection='default', prefix='bull', name='a')"
    assert dataclasses.replace(a, name="b/:{c}") == b and {dataclasses.replace(a, name="b/:{c}"): 1}[b] == 1
    assert copy.copy(b) == b and copy.deepcopy(b) == b and {copy.deepcopy(b): 1}[b] == 1


def test_a_queue_ref_pickled_by_another_process_is_found_in_this_ones_dicts():
    made_there = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pickle, sys; from queues.keys import QueueRef; "
            "sys.stdout.buffer.write(pickle.dumps(QueueRef('default', 'bull', 'emails')))",
        ],
        capture_output=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    ).stdout
    here = QueueRef("default", "bull", "emails")
    arrived = pickle.loads(made_there)
    assert arrived == here and hash(arrived) == hash(here)
    assert {here: "found"}[arrived] == "found" and arrived in {here}
