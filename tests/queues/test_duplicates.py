"""`duplicated` events told apart by their cause (queues.duplicates)."""

from queues.duplicates import CUSTOM_ID, FLOW, SCHEDULER, DuplicateKinds
from queues.keys import QueueRef
from queues.redis.probes_facet import RedisProbes

Q = QueueRef("default", "bull", "dups")


def resolve(kinds, r):
    return sorted(kinds.resolve(lambda _: RedisProbes(r, connection="default")))


def test_iterations_at_once_flow_children_by_their_parent_key_one_read_per_job_id(redis_client):
    r, kinds = redis_client, DuplicateKinds()
    r.hset(Q.job_key("child"), mapping={"name": "c", "parentKey": f"{Q.prefix}:parents:p1"})
    r.hset(Q.job_key("invoice"), mapping={"name": "i"})
    assert kinds.consider(Q, "repeat:nightly:1700000000000") == SCHEDULER  # no read
    for _ in range(3):  # a producer re-adding the same id: one read
        assert kinds.consider(Q, "invoice") is None
    assert kinds.consider(Q, "child") is None
    assert kinds.consider(Q, "gone") is None
    assert resolve(kinds, r) == [(Q, CUSTOM_ID, 1), (Q, CUSTOM_ID, 3), (Q, FLOW, 1)]
    assert kinds.reads == 3 and not kinds.pending
    assert (kinds.consider(Q, "invoice"), kinds.consider(Q, "child")) == (CUSTOM_ID, FLOW)  # remembered
    assert kinds.reads == 3


def test_pending_reads_are_bounded_and_a_kind_without_probes_reads_nothing():
    kinds = DuplicateKinds(max_pending=2)
    assert [kinds.consider(Q, j) for j in ("a", "b", "c")] == [None, None, CUSTOM_ID]
    assert sorted(kinds.resolve(lambda _: None)) == [(Q, CUSTOM_ID, 1), (Q, CUSTOM_ID, 1)]
    assert kinds.reads == 0 and not kinds.pending
