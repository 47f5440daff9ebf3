"""Rule kinds about a connection's store: reachability (every source kind) and the Redis
server's settings. They do not judge the store themselves: each asks the health check of the
same condition (``queues.health``), so an alert and the health page never disagree about what
"unreachable" or "evicting" means. A settings kind watches only connections whose source kind
reports its check (``health.connection_kinds``).

The ids (``redis_unreachable``…) are stored in alert rules, so they stay as they are."""

from __future__ import annotations

from .. import health
from ..health.redis_catalogue import EVICTION_POLICY, MEMORY
from ..messages import _
from . import summaries as says
from .base import ConnectionFacts, ConnectionKind, Target, compare, flag


def server_facts(cf: ConnectionFacts) -> health.ServerFacts:
    """The connection's last known settings in the shape the health checks read (as INFO
    reports them: the monitor keeps the checks' findings, not the raw CONFIG replies)."""
    info = {"maxmemory_policy": cf.eviction_policy, "used_memory": cf.used_memory, "maxmemory": cf.maxmemory}
    return health.ServerFacts(info={k: v for k, v in info.items() if v is not None}, config={})


class ConnectionUnreachable(ConnectionKind):
    # Any kind's reachability check (``redis.reachable``, ``connection.reachable``…); the id
    # keeps its old name.
    id, title = "redis_unreachable", _("Connection unreachable")
    help = _("The monitor cannot read this connection.")
    has_threshold = False

    def observe_connection(self, rule, name, cf):
        error = None if cf.reachable else cf.error or "unreachable"
        down = health.check_connection_reachable(name, error, source=cf.source).failed
        return flag(Target(name), down, says.summary(says.UNREACHABLE, error=cf.error) if down else says.REACHABLE)


class EvictionPolicy(ConnectionKind):
    id, title = "eviction_policy", _("Eviction policy is not noeviction")
    help = _("Redis may delete job keys when memory runs out.")
    has_threshold = False
    check = EVICTION_POLICY

    def observe_connection(self, rule, name, cf):
        if not cf.reachable or not self.applies_to(cf.source):
            return None
        result = health.check_eviction_policy(name, server_facts(cf))
        if result.status == health.UNKNOWN:
            return None  # not reported (yet): no change
        return flag(Target(name), result.failed, says.summary(says.EVICTION, policy=result.details["policy"]))


class Memory(ConnectionKind):
    # xgettext:no-python-format
    id, title, unit = "memory", _("Memory above X % of maxmemory"), _("%")
    help = _("used_memory ÷ maxmemory (never fires when maxmemory is not set).")
    percent = True
    check = MEMORY

    def observe_connection(self, rule, name, cf):
        if not cf.reachable or not self.applies_to(cf.source):
            return None
        ratio = health.check_memory(name, server_facts(cf)).details.get("ratio")
        if ratio is None:  # no maxmemory set (or not reported)
            return compare(rule, Target(name), 0.0, says.NO_MAXMEMORY)
        pct = 100.0 * ratio
        return compare(rule, Target(name), round(pct, 1), says.summary(says.MEMORY, pct=f"{pct:.1f}"))
