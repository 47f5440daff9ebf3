"""``python manage.py check_queues [--json] [--fail-on info|warning|critical]``

Runs the production-readiness checks (``queues/health/``) on every configured connection and
prints them, worst first: plain text for people, ``--json`` for scripts. The exit status is 1
when any check fails at or above ``--fail-on`` (default ``critical``), else 0 — for CI and
cron jobs. ``unknown`` results never fail the run.

No monitor is needed: the checks read each connection directly, and the few that need the monitor's
event counts (repeated stalls, duplicated adds, trimmed events) report ``unknown`` and say
why. The result is also stored for ``/metrics`` unless ``--no-store`` is given.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from dashboard.connections.registry import get_registry
from dashboard.health import checks as health_checks
from queues import health

SYMBOL = {"fail": "FAIL", "unknown": "????", "pass": " ok "}


class Command(BaseCommand):
    help = "Run the queue health checks; exit 1 when a check fails at or above --fail-on."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument(
            "--fail-on",
            choices=health.SEVERITIES,
            default="critical",
            help="Exit 1 when a check fails with this severity or worse (default: critical).",
        )
        parser.add_argument(
            "--connection",
            action="append",
            default=None,
            metavar="NAME",
            help="Check only this connection (repeatable).",
        )
        parser.add_argument("--verbose-pass", action="store_true", help="Also list passing checks in text output.")
        parser.add_argument("--no-store", action="store_true", help="Do not store the result for /metrics.")

    def handle(self, *args, **options):
        names = options["connection"]
        known = get_registry().names
        for name in names or []:
            if name not in known:
                raise CommandError(f"No connection named {name!r} (configured: {', '.join(known) or 'none'}).")
        # Only a run of every connection replaces the stored report (/metrics).
        report = health_checks.run_all(connections=names, store=not options["no_store"] and not names)
        fail_on = options["fail_on"]
        failing = report.failing_at(fail_on)
        if options["json"]:
            body = report.as_dict()
            body["fail_on"] = fail_on
            body["failing"] = len(failing)
            body["exit_code"] = 1 if failing else 0
            self.stdout.write(json.dumps(body, indent=2))
        else:
            self._text(report, fail_on, failing, options["verbose_pass"])
        if failing:
            sys.exit(1)

    def _text(self, report: health_checks.HealthReport, fail_on: str, failing, verbose_pass: bool) -> None:
        w = self.stdout.write
        if report.state_taken_at is None:
            kinds = ", ".join(health.STATE_KINDS)
            w(f"Monitor state: missing. {report.state_note} These checks need it and are reported as unknown: {kinds}.")
        else:
            age = (report.checked_at - report.state_taken_at) / 1000
            w(f"Monitor state: {age:.0f} s old (monitor {report.monitor or '?'}).")
        for conn in report.connections:
            w("")
            w(
                f"== {conn.name} ({conn.display_url}): {conn.worst if conn.worst != 'ok' else 'all checks pass'}, "
                f"{len(conn.failing)} failing, {len(conn.unknown)} unknown, {len(conn.passing)} passing"
            )
            for r in conn.results:
                if r.status == health.PASS and not verbose_pass:
                    continue
                where = f" [{r.prefix}:{r.queue}]" if r.queue else ""
                sev = r.severity.upper() if r.failed else r.status
                w(f"  {SYMBOL[r.status]} {sev:<8} {r.kind}{where}: {r.summary}")
                if r.failed:
                    w(f"       why: {r.explanation}")
                    w(f"       fix: {r.fix}")
        w("")
        if failing:
            w(f"{len(failing)} check(s) fail at or above {fail_on}: exit 1.")
        else:
            w(f"No check fails at or above {fail_on}.")
