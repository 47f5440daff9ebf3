"""The server facet of the Redis Cluster kind: whether the cluster answers, and which queues it
holds that cannot run there (keys in several hash slots: no hash tag). The node checks (eviction
policy, persistence, memory, version) and the queue checks are not run on a Cluster yet."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import SourceUnavailable
from ..health import CheckResult, Thresholds
from ..health.cluster_catalogue import HASH_SLOTS
from ..health.reachability import check_connection_reachable
from ..health.results import FAIL, PASS
from ..keys import QueueRef
from ..messages import _
from ..snapshot import QueueSnapshot
from ..workers import Worker


class ClusterServer:
    def __init__(self, spanning_slots: Callable[[], list[QueueRef]], *, connection: str, kind: str):
        # ``spanning_slots`` raises ``SourceUnavailable`` when the cluster cannot be read.
        self._spanning_slots, self.connection, self.kind = spanning_slots, connection, kind

    def health_checks(
        self,
        queues: list[QueueRef],
        *,
        state: dict | None,
        now: int,
        thresholds: Thresholds,
        is_dead_letter: Callable[[str], bool],
        snapshots: Mapping[QueueRef, QueueSnapshot] | None,
        workers: Mapping[QueueRef, list[Worker]] | None,
        workers_at: int | None,
    ) -> list[CheckResult]:
        try:
            spanning = self._spanning_slots()
        except SourceUnavailable as exc:
            return [check_connection_reachable(self.connection, exc.reason, source=self.kind)]
        return [check_connection_reachable(self.connection, None, source=self.kind), self.hash_slots(spanning)]

    def hash_slots(self, spanning: list[QueueRef]) -> CheckResult:
        if not spanning:
            return CheckResult(HASH_SLOTS, PASS, self.connection, _("Every queue found has its keys in one hash slot."))
        names = ", ".join(f"{q.prefix}:{q.name}" for q in spanning)
        return CheckResult(
            HASH_SLOTS,
            FAIL,
            self.connection,
            _(
                "Queues with keys in several hash slots, which BullMQ cannot run on this Cluster and which are "
                "not listed: {names}.",
                names=names,
            ),
            details={"queues": [f"{q.prefix}:{q.name}" for q in spanning]},
        )
