"""The state document's entries are re-serialised only for what changed: a queue's per-job-name
timings (most of its entry) are kept as JSON until the monitor counts a new observation of them,
and what it publishes always equals the queue's current timings. A write sends only the entries
that changed since the last one, and the whole document whenever what is stored is not that
write's (expired, written by another monitor, a write that failed)."""

from __future__ import annotations

import pytest

from dashboard.core import dash_redis, state_store
from dashboard.live.rates import build_signals
from dashboard.monitor.queue_state import QueueState
from dashboard.monitor.state_document import StateDocument, timings_totals
from queues.keys import QueueRef
from queues.rates import QueueSeries
from queues.snapshot import QueueSnapshot

Q = QueueRef("default", "bull", "timed")


def refreshed(st: QueueState, taken_at: int, queue: QueueRef = Q, waiting: int = 1) -> None:
    """What a refresh leaves: new signals."""
    snap = QueueSnapshot(queue=queue, counts={"waiting": waiting}, paused=False, schedulers=0, taken_at=taken_at)
    st.signals = build_signals(snap, QueueSeries(), now_ms=taken_at)


@pytest.mark.django_db
def test_timings_are_published_as_counted_and_serialised_again_only_when_counted(private_redis):
    dash = dash_redis.dashboard_redis()
    st, doc = QueueState(), StateDocument()
    states = {Q: st}

    def published_timings() -> dict:
        doc.publish(dash, states=states, connection_names=["default"], down={}, monitor_name="m")
        (entry,) = state_store.read_state(dash)["queues"]
        return entry["timings"]

    refreshed(st, 1_000)
    st.timings.count(name="email", ts_ms=1_000, kind="wait", ms=40)
    assert published_timings() == timings_totals(st.timings) and published_timings()["email"]["wait"]["count"] == 1
    kept = doc.timings[Q][1]
    refreshed(st, 2_000)  # new figures, no new observation: the timings' JSON is reused
    assert published_timings()["email"]["wait"]["count"] == 1 and doc.timings[Q][1] is kept
    st.timings.count(name="email", ts_ms=2_000, kind="processing", ms=900)
    st.timings.count(name="sms", ts_ms=2_000, kind="wait", ms=5)
    refreshed(st, 3_000)
    assert published_timings() == timings_totals(st.timings)
    assert published_timings()["sms"]["wait"]["count"] == 1 and doc.timings[Q][1] is not kept


class CommandLog:
    """The commands sent to the dashboard Redis while a block runs: the single ones and those of
    the pipelines (MONITOR would need a connection of its own; the arguments are what matter)."""

    def __init__(self, client) -> None:
        self.client, self.calls = client, []

    def __enter__(self):
        real_command, real_pipeline = self.client.execute_command, self.client.pipeline

        def command(*args, **options):
            self.calls.append(args)
            return real_command(*args, **options)

        def pipeline(*args, **options):
            pipe = real_pipeline(*args, **options)
            real_execute = pipe.execute

            def execute(*a, **o):
                self.calls.extend(args for args, _ in pipe.command_stack)
                return real_execute(*a, **o)

            pipe.execute = execute
            return pipe

        self.client.execute_command, self.client.pipeline = command, pipeline
        return self

    def __exit__(self, *exc) -> None:
        del self.client.execute_command, self.client.pipeline

    def written_fields(self) -> set[str]:
        """The queue fields the writes carried (a write of changes, or a whole one)."""
        fields = set()
        for args in self.calls:
            fields |= {a for a in args if isinstance(a, str) and a.startswith(state_store.QUEUE_PREFIX)}
        return fields


def names(dash) -> dict[str, int]:
    return {e["name"]: e["counts"]["waiting"] for e in state_store.read_state(dash)["queues"]}


def writer(count: int):
    """``count`` queues refreshed once, a monitor's ``StateDocument``, and its ``publish(only=None)``,
    which returns the names of the queues whose fields the write sent."""
    dash = dash_redis.dashboard_redis()
    queues = [QueueRef("default", "bull", f"q{i}") for i in range(count)]
    states = {q: QueueState() for q in queues}
    for q, st in states.items():
        refreshed(st, 1_000, q)
    doc = StateDocument()

    def publish(only=None) -> set[str]:
        with CommandLog(dash) as log:
            doc.publish(dash, states=states, connection_names=["default"], down={}, monitor_name="m", only=only)
        return {f.split('"')[-2] for f in log.written_fields()}

    return dash, queues, states, publish


@pytest.mark.django_db
def test_a_write_sends_only_the_changed_entries_and_a_whole_one_when_the_stored_is_not_its_own(private_redis):
    dash, queues, states, publish = writer(5)

    assert publish() == {"q0", "q1", "q2", "q3", "q4"}  # the first write is whole
    assert names(dash) == dict.fromkeys(["q0", "q1", "q2", "q3", "q4"], 1)
    assert publish() == set()  # nothing changed: no entry is sent
    refreshed(states[queues[1]], 2_000, queues[1], waiting=7)
    del states[queues[4]]
    assert publish() == {"q1", "q4"}  # q1 changed, q4's field removed
    assert names(dash) == {"q0": 1, "q1": 7, "q2": 1, "q3": 1}
    assert state_store.read_state_entry(dash, queues[1])["counts"]["waiting"] == 7
    assert state_store.read_state_entry(dash, queues[4]) is None
    assert [name for _, _, name in state_store.read_order(dash)["queues"]] == ["q0", "q1", "q2", "q3"]

    dash.delete(state_store.STATE_KEY)  # expired while the monitor was stuck
    refreshed(states[queues[2]], 3_000, queues[2], waiting=3)
    assert publish() == {"q0", "q1", "q2", "q3"}
    assert names(dash) == {"q0": 1, "q1": 7, "q2": 3, "q3": 1}

    # Another monitor wrote its own document meanwhile (a lock lapse): replaced whole, not patched.
    state_store.publish_state(dash, {"taken_at": 1, "monitor": "other", "connections": {}, "queues": []})
    refreshed(states[queues[3]], 4_000, queues[3], waiting=9)
    assert publish() == {"q0", "q1", "q2", "q3"}
    assert names(dash) == {"q0": 1, "q1": 7, "q2": 3, "q3": 9}
    assert state_store.read_state(dash)["monitor"] == "m"

    # Something else stored a string under the key: the write of changes is refused by Redis
    # (WRONGTYPE) and the whole document replaces it.
    dash.set(state_store.STATE_KEY, "not a hash")
    assert publish() == {"q0", "q1", "q2", "q3"}
    assert names(dash) == {"q0": 1, "q1": 7, "q2": 3, "q3": 9}


@pytest.mark.django_db
def test_a_refresh_of_a_few_queues_writes_only_their_entries_at_once(private_redis):
    """What a quiet read or a refresh between ticks publishes: the refreshed queues' entries and
    the head, not the order document (the next whole write brings it); whole when the stored
    document is not the last write's."""
    dash, queues, states, publish = writer(3)

    assert publish(only=[queues[0]]) == {"q0", "q1", "q2"}  # nothing stored yet: whole
    order_before = dash.get(state_store.ORDER_KEY)
    head_before = state_store.read_state_head(dash)
    refreshed(states[queues[0]], 2_000, queues[0], waiting=4)
    refreshed(states[queues[1]], 2_000, queues[1], waiting=5)
    assert publish(only=[queues[0]]) == {"q0"}
    assert names(dash) == {"q0": 4, "q1": 1, "q2": 1}  # q1 waits for its own refresh's write
    assert dash.get(state_store.ORDER_KEY) == order_before
    assert state_store.read_state_head(dash)["taken_at"] >= head_before["taken_at"]
    assert publish(only=[queues[0]]) == set()  # unchanged since: nothing sent
    dash.delete(state_store.STATE_KEY)  # expired meanwhile
    refreshed(states[queues[2]], 3_000, queues[2], waiting=6)
    assert publish(only=[queues[2]]) == {"q0", "q1", "q2"}  # the write of one entry is refused: whole
    assert names(dash) == {"q0": 4, "q1": 5, "q2": 6}


@pytest.mark.django_db
def test_any_queue_name_gets_a_field_of_its_own(private_redis):
    """Names with ``/ : { "``, non-ASCII letters and a lone surrogate (not UTF-8: orjson refuses
    it, the entry is written by ``json``) each get their own field and read back as they were."""
    dash = dash_redis.dashboard_redis()
    names = ['a/b:{c}"d', "ñandú", "bad\udcff", "bad\udcfe"]
    states = {}
    for name in names:
        q = QueueRef("default", "bull", name)
        states[q] = QueueState()
        refreshed(states[q], 1_000, q)
    StateDocument().publish(dash, states=states, connection_names=["default"], down={}, monitor_name="m")
    assert sorted(e["name"] for e in state_store.read_state(dash)["queues"]) == sorted(names)
    assert state_store.read_state_entry(dash, QueueRef("default", "bull", "bad\udcff"))["name"] == "bad\udcff"
