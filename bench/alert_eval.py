"""Cost of one alert-rule evaluation in the monitor, at 1,000 queues.

    .venv/bin/python bench/alert_eval.py [--queues 1000] [--rules 10] [--firing 300] [--rounds 20]

What it does: a fresh SQLite database in a temp dir (migrated), ``--rules`` rules of
different kinds scoped to every queue, and per-queue signals built the way the monitor builds
them (``dashboard.live.rates.build_signals``). ``--firing`` of the queues are over every rule's
threshold. It then times ``dashboard.alerts.engine.evaluate_rules`` — what the monitor's
"alerts" periodic job runs every ``QUEUEWATCH_ALERT_INTERVAL_S`` seconds — in three phases:

* quiet: nothing over a threshold (the usual case);
* opening: the first evaluation after ``--firing`` queues went over (alerts opened, fired,
  notifications written, grouped per rule);
* steady: further evaluations while they keep firing (values change every round).

Progress goes to stderr; ONE JSON object with the figures is the last line of stdout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=10)
    parser.add_argument("--firing", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="qw-alert-bench-")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "QUEUEWATCH_INSECURE_DEV": "1",
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "QUEUEWATCH_SECRET_KEY": "bench-" + "x" * 40,
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from dashboard.alerts.engine import evaluate_rules
    from dashboard.alerts.models import Alert, AlertRule, Channel, Notification
    from dashboard.live.rates import build_signals
    from queues.alert_rules import ConnectionFacts, Facts
    from queues.keys import QueueRef
    from queues.rates import QueueSeries, count_event
    from queues.snapshot import COUNT_STATES, QueueSnapshot

    channel = Channel.objects.create(name="bench", kind=Channel.WEBHOOK, config={"url": "http://127.0.0.1:9/"})
    kinds = [
        ("backlog", 100),
        ("oldest_waiting", 600),
        ("dlq_depth", 50),
        ("failure_ratio", 50),
        ("stalled_now", 0),
        ("dlq_growth", 10),
        ("stalled_window", 5),
    ]
    for i in range(args.rules):
        kind, threshold = kinds[i % len(kinds)]
        rule = AlertRule.objects.create(name=f"rule {i}", kind=kind, threshold=threshold, repeat_minutes=60)
        rule.channels.set([channel])

    def signals(now: dt.datetime, *, over: int) -> list:
        now_ms = int(now.timestamp() * 1000)
        out = []
        for i in range(args.queues):
            bad = i < over
            counts = dict.fromkeys(COUNT_STATES, 0)
            counts.update(waiting=500 if bad else 5, failed=80 if bad else 1)
            snap = QueueSnapshot(
                QueueRef("default", "bull", f"queue-{i:04d}"),
                counts,
                False,
                0,
                oldest_waiting_ts=now_ms - (900_000 if bad else 1000),
                taken_at=now_ms,
            )
            series = QueueSeries()
            for k in range(30 if bad else 3):
                count_event(series, "failed" if bad else "completed", now_ms - k * 1000, {})
                count_event(series, "stalled" if bad else "added", now_ms - k * 1000, {})
            out.append(build_signals(snap, series, now_ms=now_ms, stalled_now=["1"] if bad else []))
        return out

    conns = {"default": ConnectionFacts()}
    t0 = dt.datetime.now(dt.UTC)

    def timed(over: int, rounds: int, start_round: int) -> list[float]:
        out = []
        for r in range(rounds):
            now = t0 + dt.timedelta(seconds=5 * (start_round + r))
            facts = Facts(queues=signals(now, over=over), connections=conns)
            started = time.perf_counter()
            evaluate_rules(facts=facts, now=now)
            out.append(time.perf_counter() - started)
        return out

    print("quiet…", file=sys.stderr)
    quiet = timed(0, args.rounds, 0)
    print("opening…", file=sys.stderr)
    opening = timed(args.firing, 1, args.rounds)
    print("steady…", file=sys.stderr)
    steady = timed(args.firing, args.rounds, args.rounds + 1)
    result = {
        "queues": args.queues,
        "rules": args.rules,
        "firing_queues": args.firing,
        "open_alerts": Alert.objects.filter(state=Alert.FIRING).count(),
        "notifications": Notification.objects.count(),
        "quiet_eval_ms_median": round(statistics.median(quiet) * 1000, 1),
        "opening_eval_ms": round(opening[0] * 1000, 1),
        "steady_eval_ms_median": round(statistics.median(steady) * 1000, 1),
        "steady_eval_ms_max": round(max(steady) * 1000, 1),
    }
    for k, v in result.items():
        print(f"{k}: {v}", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
