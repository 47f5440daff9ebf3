"""The p95 wait / processing time rule kinds, through the rule engine: per
queue and per job name, windows, minimum volume, pending, hysteresis, grouping and silences.
Samples are counted into a real ``QueueTimings`` the way the monitor's job clock counts them."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from django.core.exceptions import ValidationError

from dashboard.alerts.engine import evaluate_rules
from dashboard.alerts.forms import RuleForm
from dashboard.alerts.models import Alert, Notification, Silence
from queues.alert_rules import RuleSpec, describe_threshold, rule_evaluate
from tests.support.alerting import T0, facts, make_channel, make_rule, signals

S = dt.timedelta(seconds=1)
MIN = dt.timedelta(minutes=1)


def waits(name, ms, n, before_s=20):
    return [(name, "wait", ms, before_s)] * n


def test_the_p95_measured_is_within_ten_percent_of_the_true_one():
    rng = random.Random(14)
    samples = [int(rng.lognormvariate(7, 0.8)) for _ in range(2000)]  # ~1 s median, long tail
    truth = sorted(samples)[int(0.95 * len(samples)) - 1] / 1000
    sig = signals(timings=[("resize", "processing", ms, 30) for ms in samples])
    (obs,) = rule_evaluate(rule=RuleSpec(id=1, kind="processing_p95", threshold=1), facts=facts(sig), now=T0)
    assert abs(obs.value - truth) <= 0.10 * truth
    assert obs.above and obs.summary.startswith("p95 processing time") and "2000 jobs in 5 min" in obs.summary


def test_only_samples_inside_the_window_count():
    sig = signals(timings=waits("resize", 9000, 20, before_s=4 * 60) + waits("resize", 50, 20, before_s=10))
    one = RuleSpec(id=1, kind="wait_p95", threshold=1, window_minutes=1)
    five = RuleSpec(id=2, kind="wait_p95", threshold=1, window_minutes=5)
    (recent,) = rule_evaluate(rule=one, facts=facts(sig), now=T0)
    (wider,) = rule_evaluate(rule=five, facts=facts(sig), now=T0)
    assert not recent.above and recent.value == pytest.approx(0.05, rel=0.1)
    assert wider.above and wider.value == pytest.approx(9, rel=0.1)


def test_below_the_minimum_volume_measures_zero_and_says_why():
    rule = RuleSpec(id=1, kind="wait_p95", threshold=1, min_volume=10)
    (few,) = rule_evaluate(rule=rule, facts=facts(signals(timings=waits("resize", 9000, 9))), now=T0)
    (enough,) = rule_evaluate(rule=rule, facts=facts(signals(timings=waits("resize", 9000, 10))), now=T0)
    assert few.value == 0 and not few.above and "minimum volume of 10" in few.summary
    assert enough.above
    (quiet,) = rule_evaluate(rule=RuleSpec(id=2, kind="wait_p95", threshold=1), facts=facts(signals()), now=T0)
    assert quiet.value == 0 and not quiet.above and "0 jobs timed" in quiet.summary


def test_a_job_name_glob_gives_one_target_per_matching_name_and_a_queue_rule_one_per_queue():
    sig = signals(timings=waits("image.resize", 5000, 10) + waits("image.crop", 100, 10) + waits("mail", 9000, 10))
    per_name = RuleSpec(id=1, kind="wait_p95", threshold=1, job_name="image.*")
    obs = {o.target.item: o for o in rule_evaluate(rule=per_name, facts=facts(sig), now=T0)}
    assert set(obs) == {"image.crop", "image.resize"}
    assert obs["image.resize"].above and not obs["image.crop"].above
    (whole,) = rule_evaluate(rule=RuleSpec(id=2, kind="wait_p95", threshold=1), facts=facts(sig), now=T0)
    assert whole.target.item == "" and whole.above  # mail and image.resize: 2/3 of the waits are long


def test_a_name_seen_before_but_quiet_in_the_window_is_observed_as_zero():
    sig = signals(timings=waits("resize", 5000, 10, before_s=15 * 60) + waits("mail", 10, 3))
    rule = RuleSpec(id=1, kind="wait_p95", threshold=1, window_minutes=1, job_name="*")
    obs = {o.target.item: o.value for o in rule_evaluate(rule=rule, facts=facts(sig), now=T0)}
    assert obs == {"mail": 0.01, "resize": 0.0}


@pytest.mark.django_db
def test_job_name_alerts_pend_fire_group_into_one_notification_and_resolve_with_hysteresis():
    # Saved: evaluate_rules reads it back.
    make_rule(
        kind="processing_p95", threshold=2, resolve_threshold=1, for_seconds=60, job_name="*", channels=[make_channel()]
    )

    def at(resize_ms, crop_ms):
        return facts(
            signals(timings=[("resize", "processing", resize_ms, 10)] * 10 + [("crop", "processing", crop_ms, 10)] * 10)
        )

    evaluate_rules(facts=at(3000, 4000), now=T0)
    assert set(Alert.objects.values_list("item", "state")) == {("resize", "pending"), ("crop", "pending")}
    evaluate_rules(facts=at(3000, 4000), now=T0 + 60 * S)
    assert set(Alert.objects.values_list("state", flat=True)) == {"firing"}
    (note,) = Notification.objects.all()  # both names in one notification
    assert sorted(a["target"]["item"] for a in note.payload["alerts"]) == ["crop", "resize"]
    assert "job name “resize”" in note.subject and "job name “crop”" in note.subject
    evaluate_rules(facts=at(1500, 900), now=T0 + 2 * MIN)  # resize between the thresholds: still firing
    assert dict(Alert.objects.values_list("item", "state")) == {"resize": "firing", "crop": "resolved"}
    evaluate_rules(facts=at(1000, 900), now=T0 + 3 * MIN)
    assert set(Alert.objects.values_list("state", flat=True)) == {"resolved"}


@pytest.mark.django_db
def test_a_silence_holds_the_notifications_of_a_timing_alert():
    make_rule(kind="wait_p95", threshold=1, channels=[make_channel()])
    Silence.objects.create(
        connection="default",
        queue_glob="orders",
        starts_at=T0 - MIN,
        ends_at=T0 + 10 * MIN,
        author="sam",
        comment="load test",
    )
    bad = facts(signals(timings=waits("resize", 5000, 10)), signals("billing", timings=waits("invoice", 5000, 10)))
    evaluate_rules(facts=bad, now=T0)
    assert Alert.objects.get(queue="orders").silenced_by.startswith("silence by sam")
    assert [a["target"]["queue"] for n in Notification.objects.all() for a in n.payload["alerts"]] == ["billing"]


@pytest.mark.django_db
def test_job_name_is_only_accepted_on_timing_rules_and_shows_in_the_condition():
    backlog = make_rule(name="b", kind="backlog", threshold=5, job_name="resize")
    with pytest.raises(ValidationError) as err:
        backlog.full_clean()
    assert "wait-p95 or processing-p95" in str(err.value.message_dict["job_name"])
    timing = make_rule(name="t", kind="wait_p95", threshold=2.5, window_minutes=15, job_name="resize")
    timing.full_clean()
    assert describe_threshold(timing) == "p95 wait time above T: 2.5 seconds over 15 min, job name resize"
    assert "job_name" in RuleForm().fields
