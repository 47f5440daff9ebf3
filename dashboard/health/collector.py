"""The metric families of ``/metrics``, as a ``prometheus_client`` custom collector.

Built only from documents already in the dashboard Redis (and the database), so a scrape never
reads the monitored Redis, whatever the scrape interval or the number of Prometheus servers:

* queue figures from the monitor's state document (``dashboard.core.state_store.read_state``),
  written once per tick by the leading monitor;
* check results from the last stored health report (``queuewatch:health``, written by whoever
  last ran the checks: the health page, ``manage.py check_queues``, or the monitor through
  ``dashboard.health.checks.run_and_store``), with its age, so a stale result is visible;
* open alerts (``ALERTS{alertname, alertstate}``, as Prometheus exposes its own) from the
  database the monitor writes them to.

Counters (``*_total``) count events since the leading monitor started leading; Prometheus'
``rate()``/``increase()`` handle the reset when leadership moves.

Names, types, HELP texts and labels are fixed by ``tests/health/golden/metrics.txt``; the
families are listed, one line each, in ``docs/metrics.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.samples import Sample

from dashboard.health.exposition import EVERYTHING, Wanted, exposition
from queues.rates import RATE_WINDOWS
from queues.states import COUNT_STATES
from queues.timings import PROMETHEUS_LE_SECONDS

# The text format 0.0.4, as before prometheus_client; no content negotiation (OpenMetrics
# or the 1.0.0 text format would change what a scraper sees).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
# Keys of the state document's ``events_total``: BullMQ's event names, '-' written '_'.
COUNTED_EVENTS = ("completed", "failed", "stalled", "added", "duplicated", "deduplicated", "retries_exhausted")
WINDOWS = tuple(str(w) for w in RATE_WINDOWS)  # as the state document's JSON keys them
QUEUE_LABELS = ("connection", "prefix", "queue")
CHECK_LABELS = ("connection", "prefix", "queue", "kind")
ALERT_LABELS = ("alertname", "alertstate", "severity", "connection", "prefix", "queue", "item", "silenced")

QUEUE_GAUGES = (
    # (name, HELP, value from the queue's entry in the state document)
    ("queuewatch_queue_paused", "1 if the queue is paused.", lambda q: 1 if q.get("paused") else 0),
    (
        "queuewatch_queue_oldest_waiting_age_seconds",
        "Age of the oldest waiting job; 0 when none is waiting.",
        lambda q: (q.get("oldest_waiting_age_ms") or 0) / 1000,
    ),
    (
        "queuewatch_queue_stalled_now",
        "Jobs in active whose lock is gone: the next stall check re-runs them.",
        lambda q: int(q.get("stalled_now") or 0),
    ),
    (
        "queuewatch_queue_stall_failed_15m",
        "Jobs failed in the last 15 minutes for stalling more than allowed.",
        lambda q: int(q.get("stall_failed_15m") or 0),
    ),
    (
        "queuewatch_queue_legacy_paused_jobs",
        "Jobs in a legacy BullMQ 5 paused list (not run until resumed).",
        lambda q: int(q.get("legacy_paused_jobs") or 0),
    ),
)
PER_MINUTE_GAUGES = (
    # (name, HELP, key in the queue's rates_per_min)
    (
        "queuewatch_queue_dead_letter_growth_per_minute",
        "Jobs entering the dead-letter set per minute (for an application DLQ queue: jobs added), "
        "averaged over the window.",
        "dead_letter",
    ),
    (
        "queuewatch_queue_attempt_failures_per_minute",
        "Failed attempts that will be retried (not final failures) per minute, averaged over the window.",
        "attempt_failed",
    ),
)


@dataclass(frozen=True)
class ScrapeSources:
    """Everything one scrape shows; any document may be missing (None)."""

    state: dict | None  # the monitor's state document
    health: dict | None  # the stored health report
    alerts: list[dict] | None  # open alerts (values of Alert rows), None: not shown at all
    now_ms: int  # the scrape's clock, for the documents' ages
    wanted: Wanted = EVERYTHING  # the samples asked for (``name[]``)


class QueuewatchCollector:
    """A custom collector over one scrape's sources. Pure: everything it yields comes from
    ``sources``, so it is tested without Redis, a database or a clock."""

    def __init__(self, sources: ScrapeSources):
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        s, w = self.sources, self.sources.wanted
        if s.alerts is not None and w.family("ALERTS", "gauge"):
            yield alert_family(s.alerts)
        yield from freshness_families(
            w,
            "queuewatch_monitor_state",
            s.state,
            "taken_at",
            s.now_ms,
            present="1 if a leading monitor's state document is available.",
            timestamp="When the monitor took the state document (Unix time).",
            age="Age of the monitor's state document at scrape time.",
        )
        if s.state:
            yield from state_families(s.state, w)
        yield from freshness_families(
            w,
            "queuewatch_health",
            s.health,
            "checked_at",
            s.now_ms,
            present="1 if a stored health-check report is available.",
            timestamp="When the stored health checks ran (Unix time).",
            age="Age of the stored health-check report at scrape time.",
        )
        if s.health:
            yield from check_families(s.health, w)


def render_metrics(
    *,
    state: dict | None,
    health: dict | None,
    now_ms: int,
    alerts: list[dict] | None = None,
    wanted: Wanted = EVERYTHING,
) -> str:
    """The exposition text of one scrape. The collector holds that scrape's documents; nothing
    is shared with prometheus_client's global registry."""
    sources = ScrapeSources(state=state, health=health, alerts=alerts, now_ms=now_ms, wanted=wanted)
    return exposition(QueuewatchCollector(sources).collect(), wanted)


STATE_FAMILY_PREFIXES = ("queuewatch_monitor_state", "queuewatch_connection_", "queuewatch_queue_", "queuewatch_job_")


def documents_needed(wanted: Wanted) -> tuple[bool, bool, bool]:
    """Whether the families ``wanted`` need (the state document, the health report, the open
    alerts): a scrape reads only those."""
    return (
        wanted.any_starting(*STATE_FAMILY_PREFIXES),
        wanted.any_starting("queuewatch_health", "queuewatch_check_"),
        wanted.any_starting("ALERTS"),
    )


def alert_family(alerts: list[dict]) -> GaugeMetricFamily:
    # Prometheus' own shape: one ALERTS sample per pending or firing alert.
    family = GaugeMetricFamily(
        "ALERTS",
        "Open Queuewatch alerts, as Prometheus shows its own (alertstate pending or firing).",
        labels=ALERT_LABELS,
    )
    for a in alerts:
        family.add_metric(
            [
                a["rule__name"],
                a["state"],
                a["rule__severity"],
                a["connection"],
                a["prefix"],
                a["queue"],
                a["item"],
                "true" if a["silenced_by"] else "false",
            ],
            1,
        )
    return family


def freshness_families(
    w: Wanted, name: str, doc: dict | None, time_field: str, now_ms: int, *, present: str, timestamp: str, age: str
) -> Iterator[GaugeMetricFamily]:
    """``<name>_present``, and when the document exists its ``_timestamp_seconds`` and
    ``_age_seconds``: how a scraper tells "no data" and "stale data" from "all zero"."""
    if w.family(f"{name}_present", "gauge"):
        yield GaugeMetricFamily(f"{name}_present", present, value=1 if doc else 0)
    if doc:
        at = int(doc.get(time_field) or 0)
        if w.family(f"{name}_timestamp_seconds", "gauge"):
            yield GaugeMetricFamily(f"{name}_timestamp_seconds", timestamp, value=at / 1000)
        if w.family(f"{name}_age_seconds", "gauge"):
            yield GaugeMetricFamily(f"{name}_age_seconds", age, value=max(0, now_ms - at) / 1000)


def queue_label_values(q: dict) -> list[str]:
    return [str(q.get("connection", "")), str(q.get("prefix", "")), str(q.get("name", ""))]


def state_families(state: dict, w: Wanted = EVERYTHING) -> Iterator[Metric]:
    """Connection reachability and every queue's figures from the monitor's state document
    (the families ``w`` wants)."""
    if w.family("queuewatch_connection_up", "gauge"):
        up = GaugeMetricFamily(
            "queuewatch_connection_up",
            "1 if the monitor reaches the monitored Redis connection.",
            labels=["connection"],
        )
        for name, conn in sorted((state.get("connections") or {}).items()):
            up.add_metric([name], 1 if conn.get("ok") else 0)
        yield up

    queues = state.get("queues") or []
    if w.family("queuewatch_queue_jobs", "gauge"):
        jobs = GaugeMetricFamily(
            "queuewatch_queue_jobs",
            "Jobs in each state, as BullMQ's getJobCounts() (waiting excludes a legacy paused list).",
            labels=[*QUEUE_LABELS, "state"],
        )
        for q in queues:
            counts = q.get("counts") or {}
            # A kind that counts a paused queue's ready jobs apart (BullMQ on PostgreSQL) has them
            # under "paused", as its getJobCounts() does; Redis counts never carry that key.
            for st in (*COUNT_STATES, "paused") if "paused" in counts else COUNT_STATES:
                jobs.add_metric([*queue_label_values(q), st], int(counts.get(st) or 0))
        yield jobs

    for name, help_text, value in QUEUE_GAUGES:
        if w.family(name, "gauge"):
            family = GaugeMetricFamily(name, help_text, labels=QUEUE_LABELS)
            for q in queues:
                family.add_metric(queue_label_values(q), value(q))
            yield family

    if w.family("queuewatch_queue_workers", "gauge"):
        workers = GaugeMetricFamily(
            "queuewatch_queue_workers",
            "Worker connections of the queue as the monitor last read them (CLIENT LIST); no sample when unknown.",
            labels=QUEUE_LABELS,
        )
        for q in queues:
            if isinstance(q.get("workers"), int):  # absent or null: unknown, which is not 0
                workers.add_metric(queue_label_values(q), q["workers"])
        yield workers

    for name, help_text, key in PER_MINUTE_GAUGES:
        if w.family(name, "gauge"):
            family = GaugeMetricFamily(name, help_text, labels=[*QUEUE_LABELS, "window"])
            for q in queues:
                rates = (q.get("rates_per_min") or {}).get(key) or {}
                for window in WINDOWS:
                    family.add_metric([*queue_label_values(q), f"{window}m"], float(rates.get(window) or 0.0))
            yield family

    counted = [(f"queuewatch_queue_{event}", event) for event in COUNTED_EVENTS]
    for name, event in [*counted, ("queuewatch_queue_attempt_failures", "attempt_failed")]:
        if not w.family(name, "counter"):
            continue
        if event == "attempt_failed":
            help_text = "Failed attempts that will be retried, counted since the leading monitor started leading."
        else:
            help_text = (
                f"'{event.replace('_', '-')}' events of the queue counted since the leading monitor started leading."
            )
        family = CounterMetricFamily(name, help_text, labels=QUEUE_LABELS)
        for q in queues:
            family.add_metric(queue_label_values(q), int((q.get("events_total") or {}).get(event) or 0))
        yield family

    yield from timing_families(queues, w)

    if w.family("queuewatch_queue_stream_gaps", "counter"):
        gaps = CounterMetricFamily(
            "queuewatch_queue_stream_gaps",
            "Times the events stream was trimmed past the monitor's position since it started leading.",
            labels=QUEUE_LABELS,
        )
        for q in queues:
            gaps.add_metric(queue_label_values(q), int(q.get("stream_gaps") or 0))
        yield gaps


TIMING_HISTOGRAMS = (
    (
        "queuewatch_job_wait_seconds",
        "wait",
        "Time jobs waited from ready (added, retried, or a delayed job's due time) to active, per job name, "
        "since the leading monitor started leading.",
    ),
    (
        "queuewatch_job_processing_seconds",
        "processing",
        "Time from active to completed or finally failed, per job name, since the leading monitor started leading.",
    ),
)


# Each bucket's ``le`` as the text format writes it, +Inf last (it holds the count).
LE_TEXTS = (*(f"{le:g}" for le in PROMETHEUS_LE_SECONDS), "+Inf")


def timing_families(queues: list[dict], w: Wanted = EVERYTHING) -> Iterator[HistogramMetricFamily]:
    """Wait and processing histograms per job name (the monitor's cumulative bucket counts).
    The samples are made here, as ``HistogramMetricFamily.add_metric`` makes them, without its
    per-bucket work: at 10,000 queues these are 1.3 million of a scrape's 1.8 million samples."""
    for name, key, help_text in TIMING_HISTOGRAMS:
        if not w.family(name, "histogram"):
            continue
        family = HistogramMetricFamily(name, help_text, labels=[*QUEUE_LABELS, "name"])
        add, bucket, count, total = family.samples.append, name + "_bucket", name + "_count", name + "_sum"
        for q in queues:
            for job_name, figures in sorted((q.get("timings") or {}).items()):
                h = figures.get(key) or {}
                counts = list(h.get("le") or [])
                if len(counts) != len(PROMETHEUS_LE_SECONDS):
                    continue  # a document from another version: skip rather than mislabel buckets
                labels = dict(zip((*QUEUE_LABELS, "name"), (*queue_label_values(q), str(job_name))))
                n = int(h.get("count") or 0)
                for le, value in zip(LE_TEXTS, (*counts, n)):
                    add(Sample(bucket, {**labels, "le": le}, value, None, None))
                add(Sample(count, labels, n, None))
                add(Sample(total, labels, int(h.get("sum_ms") or 0) / 1000, None))
        yield family


def check_families(health: dict, w: Wanted = EVERYTHING) -> Iterator[GaugeMetricFamily]:
    """Each stored check result as failing (with its severity) and unknown."""
    if not (w.family("queuewatch_check_failing", "gauge") or w.family("queuewatch_check_unknown", "gauge")):
        return
    failing = GaugeMetricFamily(
        "queuewatch_check_failing",
        "1 if the check fails, 0 if it passes or is unknown (label kind: the check's stable id).",
        labels=[*CHECK_LABELS, "severity"],
    )
    unknown = GaugeMetricFamily(
        "queuewatch_check_unknown", "1 if the check could not be decided (e.g. no monitor state).", labels=CHECK_LABELS
    )
    for conn in health.get("connections") or []:
        for r in conn.get("results") or []:
            labels = [
                str(r.get("connection") or conn.get("name", "")),
                str(r.get("prefix") or ""),
                str(r.get("queue") or ""),
                str(r.get("kind", "")),
            ]
            failing.add_metric([*labels, str(r.get("severity", ""))], 1 if r.get("status") == "fail" else 0)
            unknown.add_metric(labels, 1 if r.get("status") == "unknown" else 0)
    yield failing
    yield unknown
