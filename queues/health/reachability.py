"""Whether a connection answers, for any source kind: one result under the kind's reachability
check (``catalogue.reachability_kind``), in words that name no backend.

Used where Queuewatch knows only that a connection's reads failed or succeeded, not what the
store is: a connection that cannot be listed, a kind without a ``server`` facet, the alert rule
on reachability. A kind's ``server`` facet reports its own reachability in its own words (Redis:
``redis_checks.check_reachable``)."""

from __future__ import annotations

from ..messages import _
from .catalogue import reachability_kind
from .results import FAIL, PASS, CheckResult


def check_connection_reachable(connection: str, error: str | None, *, source: str) -> CheckResult:
    """``source``: the connection's source kind (``Source.kind``, e.g. "redis")."""
    kind = reachability_kind(source)
    if error:
        return CheckResult(kind, FAIL, connection, _("Cannot reach this connection: {error}.", error=error))
    return CheckResult(kind, PASS, connection, _("The connection answers."))
