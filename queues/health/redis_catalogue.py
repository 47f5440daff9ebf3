"""The Redis kind's own connection-level health checks: its entries in the health catalogue
(``queues/health/catalogue.py``), registered when this module is imported. The checks that judge
them are ``queues/health/redis_checks.py``; the queue checks are shared by every kind.

The ids keep their ``redis.`` names: /metrics labels results with them and stored alert rules
and dashboards name them."""

from __future__ import annotations

from ..messages import _
from .catalogue import Check, register_checks

REACHABLE, EVICTION_POLICY, PERSISTENCE, VERSION, MEMORY = (
    "redis.reachable",
    "redis.eviction_policy",
    "redis.persistence",
    "redis.version",
    "redis.memory",
)

REDIS_CHECKS = register_checks(
    Check(
        REACHABLE,
        "connection",
        _("Redis reachable"),
        "critical",
        _(
            "Queuewatch could not run a command on this Redis. If workers cannot either, no job is "
            "added, processed or finished."
        ),
        _("Check that the server is up and the URL, user, password and TLS settings are right."),
        source="redis",
    ),
    Check(
        EVICTION_POLICY,
        "connection",
        _("Eviction policy"),
        "critical",
        _(
            "With any maxmemory-policy other than noeviction, Redis deletes keys when memory runs "
            "out — job hashes, the wait list, locks. Jobs then vanish without failing, and a lost "
            "lock makes a running job run a second time. The setting is instance-wide, so a Redis "
            "shared with a cache is a problem even if the queues are small."
        ),
        _(
            "Set `maxmemory-policy noeviction` (redis.conf, `CONFIG SET maxmemory-policy noeviction`, "
            "or your provider's parameter group). Give the queues their own Redis if another "
            "application needs eviction for its cache."
        ),
        source="redis",
        alert_facts=(("eviction_policy", "policy"),),
    ),
    Check(
        PERSISTENCE,
        "connection",
        _("Persistence"),
        "warning",
        _(
            "With AOF off and no RDB save points, Redis keeps everything in memory only: a restart "
            "or failover loses every waiting, delayed and scheduled job."
        ),
        _(
            "Enable AOF (`appendonly yes`, `appendfsync everysec`), or at least RDB snapshots "
            "(`save 60 1000`). On a managed service, turn on its persistence/backup option."
        ),
        source="redis",
    ),
    Check(
        VERSION,
        "connection",
        _("Redis version"),
        "warning",
        _(
            "BullMQ 6 refuses to start on Redis older than 5.0.0 and recommends 6.2.0 or newer; "
            "older servers run slower fallback scripts and lack features BullMQ uses (SET KEEPTTL "
            "for deduplication replace, fractional block timeouts, SCAN TYPE)."
        ),
        _("Upgrade Redis to 6.2 or newer (7.x recommended)."),
        source="redis",
    ),
    Check(
        MEMORY,
        "connection",
        _("Memory headroom"),
        "warning",
        _(
            "Close to maxmemory, a noeviction Redis starts refusing writes with OOM errors: adds "
            "fail, and workers cannot move jobs to completed or failed, so jobs stall and run again. "
            "With an eviction policy, keys are deleted instead."
        ),
        _(
            "Raise maxmemory (or the instance size), and find what grows: usually finished jobs "
            "kept forever (set removeOnComplete / removeOnFail) or large payloads."
        ),
        source="redis",
        alert_facts=(("used_memory", "used_memory"), ("maxmemory", "maxmemory")),
    ),
)
