"""/metrics against a golden file: every family's name, type and HELP, and every sample's name,
labels and value, in order (samples as Prometheus' own parser reads them), from a fixed setup (a
published monitor state document, a stored health report and open alerts in the database).

The golden file was captured from the hand-written exposition before it moved to
``prometheus_client``, so this test is what keeps names, types, HELP and labels identical.
Only the ``*_age_seconds`` values depend on the clock; they are compared as "present".
Regenerate (only for an intended change of the exposition) with
``QUEUEWATCH_UPDATE_GOLDEN=1 pytest tests/health/test_metrics_golden.py``.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from dashboard.alerts.models import Alert
from dashboard.core import dash_redis, state_store
from dashboard.health import checks as health_checks
from dashboard.health.checks import HEALTH_KEY
from tests.support.alerting import make_rule

GOLDEN = Path(__file__).parent / "golden" / "metrics.txt"
TOKEN = "golden-metrics-token"
TAKEN_AT = 1_780_000_000_000  # ms; fixed, so the timestamps are too
COUNTS = ("waiting", "active", "delayed", "prioritized", "waiting-children", "completed", "failed")


def queue_doc(
    connection,
    prefix,
    name,
    *,
    counts,
    paused=False,
    oldest_ms=None,
    stalled_now=0,
    stall_failed=0,
    dead_letter=(0.0, 0.0, 0.0),
    totals=(0, 0, 0, 0, 0),
    gaps=0,
    legacy_paused=0,
    attempt_failed=(0.0, 0.0, 0.0),
    attempt_failed_total=0,
    timings=None,
    workers=None,
) -> dict:
    return {
        "connection": connection,
        "prefix": prefix,
        "name": name,
        "paused": paused,
        "counts": dict(zip(COUNTS, counts)),
        "oldest_waiting_age_ms": oldest_ms,
        "is_dlq": False,
        "legacy_paused_jobs": legacy_paused,
        "rates_per_min": {
            "dead_letter": dict(zip(("1", "5", "15"), dead_letter)),
            "completed": {},
            "failed": {},
            "attempt_failed": dict(zip(("1", "5", "15"), attempt_failed)),
        },
        "stalled_now": stalled_now,
        "stall_failed_15m": stall_failed,
        "events_total": {
            **dict(zip(("completed", "failed", "stalled", "added", "duplicated"), totals)),
            "attempt_failed": attempt_failed_total,
        },
        "stream_gaps": gaps,
        "timings": timings or {},
        "workers": workers,
    }


def timings_of(waits_ms: list[int], processing_ms: list[int]) -> dict:
    """The state document's per-name histograms, as the monitor publishes them."""
    from dashboard.monitor.state_document import timings_totals
    from queues.timings import QueueTimings

    t = QueueTimings()
    for ms in waits_ms:
        t.count(name="resize", ts_ms=0, kind="wait", ms=ms)
    for ms in processing_ms:
        t.count(name="resize", ts_ms=0, kind="completed", ms=ms)
    return timings_totals(t)


STATE = {
    "taken_at": TAKEN_AT,
    "monitor": "golden-monitor",
    "connections": {"default": {"ok": True, "error": None}, "replica": {"ok": False, "error": "connection refused"}},
    "queues": [
        queue_doc(
            "default",
            "bull",
            "orders",
            counts=(12, 3, 4, 1, 0, 250, 7),
            oldest_ms=4250,
            stalled_now=1,
            stall_failed=2,
            dead_letter=(1.5, 0.75, 0.2),
            totals=(250, 7, 2, 270, 3),
            gaps=1,
            attempt_failed=(4.0, 2.5, 1.25),
            attempt_failed_total=19,
            timings=timings_of([3, 40, 1500], [180, 220, 950, 12_000]),
            workers=3,
        ),
        # No worker (0) and unknown workers (null: no sample at all) are told apart.
        queue_doc(
            "default", "{app:bull}", "emails", counts=(0, 0, 0, 0, 2, 10, 0), paused=True, legacy_paused=5, workers=0
        ),
        queue_doc(
            "default",
            "bull",
            'we"ird\\name\nline',
            counts=(1, 0, 0, 0, 0, 0, 1),
            oldest_ms=1000,
            totals=(0, 1, 0, 2, 0),
        ),
    ],
}


def result(kind, status, severity, *, connection="default", prefix=None, queue=None) -> dict:
    return {
        "kind": kind,
        "scope": "queue" if queue else "connection",
        "status": status,
        "severity": severity,
        "connection": connection,
        "prefix": prefix,
        "queue": queue,
        "title": kind,
        "summary": "",
        "explanation": "",
        "fix": "",
        "details": {},
    }


HEALTH = {
    "checked_at": TAKEN_AT + 5_000,
    "monitor_state": {
        "present": True,
        "taken_at": TAKEN_AT,
        "age_ms": 5_000,
        "monitor": "golden-monitor",
        "note": None,
    },
    "connections": [
        {
            "name": "default",
            "display_url": "redis://localhost:6379/0",
            "worst": "critical",
            "results": [
                result("queue.no_workers", "fail", "critical", prefix="bull", queue="orders"),
                result("queue.paused", "fail", "warning", prefix="{app:bull}", queue="emails"),
                result("redis.persistence", "unknown", "warning"),
                result("redis.maxmemory_policy", "pass", "critical"),
            ],
        },
        {
            "name": "replica",
            "display_url": "redis://replica:6379/0",
            "worst": "critical",
            "results": [
                result("redis.reachable", "fail", "critical", connection="replica"),
            ],
        },
    ],
}


def open_alerts():
    now = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
    backlog = make_rule("orders backlog", severity="warning")
    stalls = make_rule("stalls", kind="stalled_now", severity="critical")
    Alert.objects.create(
        rule=backlog,
        fingerprint="f-orders",
        connection="default",
        prefix="bull",
        queue="orders",
        state=Alert.FIRING,
        pending_since=now,
        started_at=now,
    )
    Alert.objects.create(
        rule=stalls,
        fingerprint="f-stall",
        connection="default",
        prefix="bull",
        queue="orders",
        item="job-7",
        state=Alert.PENDING,
        pending_since=now,
        silenced_by="deploy window",
    )
    Alert.objects.create(
        rule=backlog,
        fingerprint="f-old",
        connection="default",
        prefix="bull",
        queue="emails",
        state=Alert.RESOLVED,
        pending_since=now,
        resolved_at=now,
    )  # not open: not shown


def declarations(text: str) -> list[tuple[str, str, str]]:
    """Each family's (name, type, HELP), in order. A counter's family is named without
    ``_total``: the hand-written text declared ``queuewatch_queue_completed`` for samples named
    ``queuewatch_queue_completed_total``; prometheus_client declares the sample name (what the
    0.0.4 text format wants, and what lets Prometheus attach the type to the samples)."""
    helps, out = {}, []
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[len("# HELP ") :].partition(" ")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[len("# TYPE ") :].partition(" ")
            family = name.removesuffix("_total") if kind == "counter" else name
            out.append((family, kind, helps[name]))
    return out


def samples(text: str) -> list[tuple[str, dict, object]]:
    """Every sample as a Prometheus parser reads it, in order; the values that depend on the
    clock replaced by a marker. Number formatting ("1" vs "1.0") is the parser's business."""
    return [
        (s.name, s.labels, "<age>" if s.name.endswith("_age_seconds") else s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


@pytest.mark.django_db
def test_metrics_match_the_golden_file(live_setup, settings, client):
    settings.QUEUEWATCH_METRICS_TOKEN = TOKEN
    state_store.publish_state(live_setup, STATE)
    dash_redis.put_document(live_setup, HEALTH_KEY, HEALTH, ex=60)
    open_alerts()

    response = client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = response.content.decode()
    if os.environ.get("QUEUEWATCH_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
        pytest.skip("golden file rewritten")

    golden = GOLDEN.read_text()
    assert declarations(text) == declarations(golden)
    assert samples(text) == samples(golden)
    assert len(samples(text)) == 149  # the comparison is not vacuous (95 before the timing histograms)


def test_before_any_queue_exists_the_same_families_are_declared():
    """A state document with no queues yet still declares every queue family (with no
    samples), as the golden file's: dashboards and alerts see the names from the first scrape."""
    from dashboard.health.collector import render_metrics

    empty = render_metrics(state={**STATE, "queues": []}, health=HEALTH, now_ms=TAKEN_AT + 10_000)
    golden = [d for d in declarations(GOLDEN.read_text()) if d[0] != "ALERTS"]
    assert declarations(empty) == golden
    assert not [s for s in samples(empty) if s[0].startswith("queuewatch_queue_")]


# --- name[]: a scrape asks for the samples it wants (as Prometheus' client libraries take it),
# gets exactly those, and the documents no asked-for family needs are not read.


@pytest.fixture
def scrape(live_setup, settings, client):
    settings.QUEUEWATCH_METRICS_TOKEN = TOKEN
    state_store.publish_state(live_setup, STATE)
    dash_redis.put_document(live_setup, HEALTH_KEY, HEALTH, ex=60)
    open_alerts()

    def get(*names: str):
        return client.get(reverse("metrics"), {"name[]": list(names)}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    return get


def blocks(text: str) -> dict[str, str]:
    """Each family's block of the exposition (its HELP, TYPE and samples), by declared name."""
    return {m.group(1): m.group(0) for m in re.finditer(r"# HELP (\S+) .*\n# TYPE .*\n(?:[^#].*\n)*", text)}


@pytest.mark.django_db
def test_each_family_asked_for_by_its_sample_names_is_its_block_of_the_whole(scrape):
    whole = scrape().content.decode()
    assert samples(whole) == samples(GOLDEN.read_text())  # the whole scrape is the golden one
    families = blocks(whole)
    assert len(families) >= 30
    for declared, block in families.items():
        names = sorted({line.split("{")[0].split(" ")[0] for line in block.splitlines()[2:]}) or [declared]
        alone = scrape(*names).content.decode()
        if not block.splitlines()[2:]:  # no samples (no alert open of the kind): left out, as prometheus_client does
            assert alone == "", declared
            continue
        if declared.endswith("_age_seconds"):  # the clock moved between the two scrapes
            assert alone.splitlines()[:2] == block.splitlines()[:2] and samples(alone) == samples(block)
        else:
            assert alone == block, declared


@pytest.mark.django_db
def test_one_sample_name_of_a_histogram_gives_only_those_samples(scrape):
    text = scrape("queuewatch_job_wait_seconds_count").content.decode()
    lines = text.splitlines()
    assert lines[0].startswith("# HELP queuewatch_job_wait_seconds ")
    assert lines[1] == "# TYPE queuewatch_job_wait_seconds histogram"
    assert lines[2:] and all(line.startswith("queuewatch_job_wait_seconds_count{") for line in lines[2:])


@pytest.mark.django_db
def test_unknown_names_give_an_empty_scrape_and_too_many_are_refused(scrape):
    assert scrape("no_such_metric").content == b""
    refused = scrape(*[f"m{i}" for i in range(201)])
    assert refused.status_code == 400 and b"at most 200" in refused.content
    assert scrape("x" * 201).status_code == 400


@pytest.mark.django_db
def test_only_the_documents_the_asked_families_need_are_read(scrape, monkeypatch):
    def unread(*args, **kwargs):
        raise AssertionError("read a document no asked-for family needs")

    monkeypatch.setattr(health_checks, "read_stored", unread)
    text = scrape("queuewatch_queue_jobs", "queuewatch_monitor_state_present").content.decode()
    assert 'queuewatch_queue_jobs{connection="default",prefix="bull",queue="orders",state="waiting"} 12.0' in text
    monkeypatch.undo()
    monkeypatch.setattr(state_store, "read_state", unread)
    text = scrape("queuewatch_check_failing").content.decode()
    assert text.startswith("# HELP queuewatch_check_failing ") and "queuewatch_queue_" not in text
