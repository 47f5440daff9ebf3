"""The Redis Cluster kind's own connection-level check: queues whose keys span hash slots
(registered when this module is imported; judged by ``queues/redis/cluster_health.py``)."""

from __future__ import annotations

from ..messages import _
from .catalogue import Check, register_checks

HASH_SLOTS = "redis-cluster.hash_slots"

CLUSTER_CHECKS = register_checks(
    Check(
        HASH_SLOTS,
        "connection",
        _("Queues in one hash slot"),
        "warning",
        _(
            "BullMQ runs on a Redis Cluster only when every key of a queue is in one hash slot. A queue "
            "with no hash tag in its prefix or name has keys in many slots: BullMQ's scripts refuse it "
            "(CROSSSLOT), so no job of it is added or processed, and Queuewatch cannot read it, so it "
            "is not listed with the other queues."
        ),
        _(
            "Give the queue a hash tag where your code creates it: a prefix in braces such as {bull}, "
            "or braces in the queue name such as {emails}. The keys left under the untagged name hold "
            "no working queue; delete them once nothing needs them."
        ),
        source="redis-cluster",
    ),
)
