"""Where each event -> browser sample of ``bench/many_queues.py --timeline FILE`` waited.

    .venv/bin/python bench/timeline_report.py FILE [--worst 5]

For each sample (the watched queue's ``waiting`` event, its header arriving at the tab) the
file also holds when the monitor's follower read that queue's events (``read:<queue>``), when
the loop applied them (``applied:<queue>``), when the header was handed to the channel layer
(``sent:<group>:<element>``) and every step the probe timed. Prints the p50 and p95 of each
leg (event -> read -> applied -> sent -> arrived) and, for the worst samples, the steps longer
than 8 ms that ran while they waited. Reads the file only: nothing is started.
"""

from __future__ import annotations

import argparse
import json
import statistics

LEGS = ("total", "event -> read", "read -> applied", "applied -> sent", "sent -> arrived")


def legs(rows: list) -> list[tuple[float, ...]]:
    """Per sample, worst first: (total, each leg) in ms, and the event's time (s)."""
    samples = sorted((r for r in rows if r[0] == "sample"), key=lambda r: r[1] - r[2])
    reads = sorted(r[2] for r in rows if r[0].startswith("read:"))
    applied = sorted(r[1] for r in rows if r[0].startswith("applied:"))
    sent = sorted(r[1] for r in rows if r[0].startswith("sent:queue-"))
    out = []
    for _, event, arrived in samples:
        read = next((t for t in reads if t >= event - 0.002), event)
        took = next((t for t in applied if t >= read), read)
        shown = next((t for t in sent if took <= t <= arrived), arrived)
        out.append(
            (
                (arrived - event) * 1000,
                (read - event) * 1000,
                (took - read) * 1000,
                (shown - took) * 1000,
                (arrived - shown) * 1000,
                event,
                arrived,
            )
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--worst", type=int, default=5, help="samples whose steps are listed (default 5)")
    args = ap.parse_args()
    with open(args.file) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    table = legs(rows)
    if not table:
        print("no samples in the file")
        return 1
    for i, name in enumerate(LEGS):
        values = sorted(t[i] for t in table)
        p95 = values[max(0, -(-95 * len(values) // 100) - 1)]
        print(f"{name:16s} p50 {statistics.median(values):6.0f} ms   p95 {p95:6.0f} ms")
    not_steps = {"sample", "loop_gap", "loop_stall", "tick_late"}  # intervals between steps, not steps
    steps = sorted((r for r in rows if r[0] not in not_steps and ":" not in r[0]), key=lambda r: r[1])
    for total, *_, event, arrived in table[: args.worst]:
        print(f"\n{total:.0f} ms; steps over 8 ms meanwhile (ms from the event):")
        for name, start, end in steps:
            if end > event and start < arrived and end - start > 0.008:
                print(f"  {name:28s} {(start - event) * 1000:7.0f} .. {(end - event) * 1000:7.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
