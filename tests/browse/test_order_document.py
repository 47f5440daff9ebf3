"""The order document the monitor writes for sorting (``dashboard.core.order_document``): a
queue's figures flattened by path, one column per path, and a reader that takes a document of
another shape as having nothing rather than failing the page."""

from __future__ import annotations

import json

from dashboard.browse import columns
from dashboard.core.order_document import OrderTable, PublishedOrder, order_values
from queues.keys import QueueRef

A, B = QueueRef("default", "bull", "a"), QueueRef("default", "{t}", 'we/ird:"name"')
C = QueueRef("other", "bull", "a")  # A's prefix and name on another connection


def entry(failed, *, waiting=0, paused_jobs=0, rate=None, timings=True) -> dict:
    return {
        "connection": "default",
        "prefix": "bull",
        "name": "x",
        "paused": False,
        "counts": {"failed": failed, "waiting": waiting, "paused": paused_jobs},
        "oldest_waiting_age_ms": None,
        "rates_per_min": {"completed": {"5": rate}},
        "workers": None,
        **({"timings": {"p95": 1}} if timings else {}),
    }


def order_text(head: dict, rows) -> str:
    table = OrderTable()
    for queue, values in rows:
        table.set(queue, values)
    return table.text(head, [queue for queue, _ in rows])


def test_a_queues_figures_are_flattened_by_path_and_only_the_sortable_ones_kept():
    values = order_values(entry(3, rate=1.5))
    assert values["counts.failed"] == 3 and values["rates_per_min.completed.5"] == 1.5
    assert "rates_per_min.completed.1" not in order_values({"rates_per_min": {"completed": {"1": 2, "5": 1}}})
    assert not any(path.startswith(("timings", "name", "connection")) for path in values)


def test_columns_hold_every_queue_in_order_with_none_where_a_queue_has_no_such_figure():
    rows = [(A, order_values(entry(3))), (B, {"counts.failed": 9, "workers": 2})]
    document = json.loads(order_text({"taken_at": 1}, rows))
    assert document["queues"] == [["default", "bull", "a"], ["default", "{t}", 'we/ird:"name"']]
    assert document["columns"]["workers"] == [None, 2]
    published = PublishedOrder(document)
    failed = columns.published_key("failed")
    assert published.keys(failed.paths, failed.key).of([B, A, C], "unknown") == [9, 3, "unknown"]
    waiting = columns.published_key("waiting")  # a kind's paused ready jobs are waiting ones too
    assert PublishedOrder(json.loads(order_text({}, [(A, order_values(entry(0, waiting=2, paused_jobs=5)))]))).keys(
        waiting.paths, waiting.key
    ).of([A], None) == [7]


def test_hostile_or_odd_values_sort_as_unknown_instead_of_failing_the_sort():
    # A text where a count belongs, and a non-finite rate (written as null: JSON has no infinity).
    rows = [(A, {"counts.failed": "many"}), (B, {"counts.failed": 4, "rates_per_min.completed.5": float("inf")})]
    published = PublishedOrder(json.loads(order_text({}, rows)))
    failed, throughput = columns.published_key("failed"), columns.published_key("throughput")
    assert published.keys(failed.paths, failed.key).of([A, B], None) == [0, 4]
    assert published.keys(throughput.paths, throughput.key).of([A, B], None) == [-1.0, -1.0]


def test_the_monitors_table_follows_changed_rows_new_paths_and_dropped_queues():
    table = OrderTable()
    table.set(A, {"counts.failed": 1})
    table.set(B, {"counts.failed": 2})
    first = json.loads(table.text({"taken_at": 1}, [A, B]))
    assert first["columns"] == {"counts.failed": [1, 2]} and first["taken_at"] == 1
    table.set(B, {"counts.failed": 5, "workers": 3})  # a new path: every row gets the column
    second = json.loads(table.text({}, [A, B]))
    assert second["columns"] == {"counts.failed": [1, 5], "workers": [None, 3]}
    table.drop(A)
    third = json.loads(table.text({}, [B]))
    assert third["queues"] == [["default", "{t}", 'we/ird:"name"']] and third["columns"]["workers"] == [3]
    assert json.loads(OrderTable().text({}, []))["queues"] == []


def test_a_document_of_another_shape_reads_as_empty():
    assert len(PublishedOrder(None)) == 0
    assert len(PublishedOrder({"queues": [{"connection": "default"}], "columns": {}})) == 0
    assert len(PublishedOrder({"queues": "x", "columns": {}})) == 0
    assert len(PublishedOrder({"queues": [["default", "bull"]], "columns": {}})) == 0
    assert len(PublishedOrder({"queues": [["default", "bull", ["a"]]], "columns": {}})) == 0
    short = PublishedOrder({"queues": [["default", "bull", "a"]], "columns": {"counts.failed": [1, 2]}})
    assert len(short) == 1 and short.keys(("counts.failed",), lambda n: n).of([A], "unknown") == [None]


def test_the_monitors_fast_flattening_equals_the_general_one_on_the_entries_it_builds():
    from dashboard.core.order_document import monitor_order_values
    from dashboard.live.rates import build_signals
    from dashboard.monitor.queue_state import QueueState
    from dashboard.monitor.state_document import state_entry
    from queues.rates import QueueSeries
    from queues.snapshot import COUNT_STATES, QueueSnapshot

    series = QueueSeries()
    for i, name in enumerate(("completed", "failed", "added", "stalled", "attempt_failed")):
        bucket = series.bucket(1_000_000 - 30_000 * i)
        setattr(bucket, name, getattr(bucket, name) + 3 * i + 1)
    cases = [
        (A, dict.fromkeys(COUNT_STATES, 0), None, None),
        (B, {**dict.fromkeys(COUNT_STATES, 7), "paused": 2}, 1_000, 4),
        (QueueRef("default", "bull", "orders-dlq"), {"waiting": 1, "failed": 2**62}, 0, 0),
    ]
    for queue, counts, waiting_ts, workers in cases:
        snap = QueueSnapshot(queue=queue, counts=counts, paused=True, schedulers=1, oldest_waiting_ts=waiting_ts)
        st = QueueState(signals=build_signals(snap, series, now_ms=1_000_000, workers=workers))
        built = state_entry(st, down={})
        assert monitor_order_values(built) == order_values(built)
    assert monitor_order_values(state_entry(st, down={"default": "refused"}))["workers"] is None
