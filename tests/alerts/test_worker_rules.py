"""The "jobs waiting, no workers" rule kind through the engine: pending and
hysteresis as for every kind, a paused queue not counted, and unknown workers (no CLIENT LIST
read yet, or refused) changing nothing. Real Node workers: tests/live/test_workers_node.py."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.alerts.engine import evaluate_rules
from dashboard.alerts.models import Alert
from tests.support.alerting import T0, facts, make_rule, signals

S = dt.timedelta(seconds=1)


def at(waiting, workers, paused=False):
    return facts(signals(counts={"waiting": waiting}, workers=workers, paused=paused))


@pytest.mark.django_db
def test_pending_then_firing_unknown_changes_nothing_and_hysteresis_on_the_waiting_count():
    make_rule(kind="no_workers", threshold=0, resolve_threshold=0, for_seconds=30)
    evaluate_rules(facts=at(5, 0), now=T0)
    assert Alert.objects.get().state == Alert.PENDING
    evaluate_rules(facts=at(5, None), now=T0 + 10 * S)  # unknown: still pending, not reset
    assert Alert.objects.get().state == Alert.PENDING
    evaluate_rules(facts=at(5, 0), now=T0 + 31 * S)
    assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=at(5, None), now=T0 + 40 * S)  # unknown never resolves it
    assert Alert.objects.get().state == Alert.FIRING
    evaluate_rules(facts=at(5, 1), now=T0 + 50 * S)
    assert Alert.objects.get().state == Alert.RESOLVED


@pytest.mark.django_db
def test_a_paused_queue_or_an_empty_one_needs_no_worker():
    make_rule(kind="no_workers", threshold=0)
    evaluate_rules(facts=at(5, 0, paused=True), now=T0)
    evaluate_rules(facts=at(0, 0), now=T0 + S)
    assert not Alert.objects.exists()
