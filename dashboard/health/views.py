"""The health page: production-readiness checks per connection, worst first, with the fix.

The checks run on request (a few plain commands per queue, no Lua, nothing O(jobs)); each run
is also stored for ``/metrics`` (see ``dashboard/health/checks.py``). Checks that need the monitor's
state document say so when no monitor is leading.
"""

from __future__ import annotations

import re

from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from dashboard.accounts.auth import VIEWER, role_required
from dashboard.core.i18n import translate
from dashboard.health import checks as health_checks
from queues import health

_WORST_RANK = {"ok": 0, **health.SEVERITY_RANK}
_CODE = re.compile(r"`([^`]+)`")


def code_spans(text: str) -> str:
    """Translate the text (checks mark theirs with ``queues.messages._``), escape it, then show
    `quoted` parts (option names, commands) as left-to-right <code>."""
    return mark_safe(_CODE.sub(r"<code>\1</code>", escape(translate(text))))


def _item(r: health.CheckResult) -> dict:
    return {
        "r": r,
        "title": translate(r.title),
        "summary": code_spans(r.summary),
        "explanation": code_spans(r.explanation),
        "fix": code_spans(r.fix),
    }


@require_GET
@role_required(VIEWER)  # every connection's and queue's checks: a global role (not a scoped user's grants)
def health_page(request):
    report = health_checks.run_all(store=True)
    connections = sorted(report.connections, key=lambda c: (-_WORST_RANK[c.worst], len(c.unknown) == 0))
    return render(
        request,
        "health/health.html",
        {
            "report": report,
            "state_note": code_spans(report.state_note),
            "connections": [
                {
                    "conn": c,
                    "failing": [_item(r) for r in c.failing],
                    "unknown": [_item(r) for r in c.unknown],
                    "passing": [_item(r) for r in c.passing],
                }
                for c in connections
            ],
            "state_kinds": [translate(health.CHECKS[k].title) for k in health.STATE_KINDS],
        },
    )
