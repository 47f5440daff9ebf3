"""A flow as a tree across queues, as BullMQ's ``FlowProducer.getFlow`` walks it: a job, the
children its parent records (``Job.getDependencies``: pending, processed, failed but ignored,
failed so as to fail the parent) and theirs, down the levels — read within stated bounds.

``getFlow`` reads ``maxChildren`` per kind and ``depth`` levels, with no bound on the whole; a
page must never make the monitored server do unbounded work, so a read here stops at
``FlowLimits`` (levels below the root, children per node, nodes in all, parents climbed to find
the root) and every node says how many of its children it does not show. The same types serve
every source kind; a Redis node reads them with ``queues.redis.flows``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import _

# How a parent records a child (the relation shown on each node), and the words for it.
PENDING, PROCESSED, IGNORED, UNSUCCESSFUL = "pending", "processed", "ignored", "unsuccessful"
RELATIONS = {
    PENDING: _("pending: its parent waits for it"),
    PROCESSED: _("processed: its return value is on its parent"),
    IGNORED: _("failed, its parent went on without it"),
    UNSUCCESSFUL: _("failed, and fails its parent"),
}
# A child's own flag (``queues.jobs.PARENT_FAILURE_RULES``) by the option name a producer gave.
FLAG_OPTIONS = {
    "fail": "failParentOnFailure",
    "continue": "continueParentOnFailure",
    "ignore": "ignoreDependencyOnFailure",
    "remove": "removeDependencyOnFailure",
}
# The order a node's children are shown in: what an operator acts on first.
RELATION_ORDER = (UNSUCCESSFUL, IGNORED, PENDING, PROCESSED)

# What a kind that cannot read flows yet says is not offered.
FLOW_WORDS = _("flows as a tree")

OUTCOME_CAP = 300  # characters of a node's return value or failure reason
RETURN_VALUE_READ_CAP = 64 * 1024  # a stored return value longer than this is not read for the tree


@dataclass(frozen=True)
class FlowLimits:
    depth: int = 6  # levels read below the root
    children: int = 20  # children shown per node (getFlow's default maxChildren)
    nodes: int = 200  # nodes read in all
    climb: int = 20  # parents followed up from the job to find the flow's root


@dataclass
class FlowNode:
    key: str  # the job's full key, ``<prefix>:<queue>:<id>``
    id: str
    exists: bool = True
    state: str = "unknown"
    name: str = ""
    parent_key: str = ""
    # What this job's failure does to its parent (``queues.jobs.PARENT_FAILURE_RULES``).
    failure_rule: str = ""
    relation: str = ""  # how its parent records it (RELATIONS); "" for the root
    failed_reason: str = ""  # redacted, cut to OUTCOME_CAP
    return_value: str = ""  # redacted, cut to OUTCOME_CAP
    return_value_size: int = 0  # bytes stored, when too long to read here
    # Children by relation, as the parent's own records count them.
    counts: dict[str, int] = field(default_factory=dict)
    children: list[FlowNode] = field(default_factory=list)
    below_depth: bool = False  # has children, but the tree stops at this level

    @property
    def child_total(self) -> int:
        return sum(self.counts.values())

    @property
    def not_shown(self) -> int:
        """Children this node has that the tree does not show."""
        return self.child_total - len(self.children)

    @property
    def pending(self) -> int:
        return self.counts.get(PENDING, 0)

    @property
    def unsuccessful(self) -> int:
        return self.counts.get(UNSUCCESSFUL, 0)

    @property
    def unsuccessful_children(self) -> int:  # the name the retry form reads (JobDetail's too)
        return self.unsuccessful

    @property
    def flag(self) -> str:
        return FLAG_OPTIONS.get(self.failure_rule, "")

    @property
    def relation_text(self) -> str:
        return RELATIONS.get(self.relation, "")

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class FlowTree:
    root: FlowNode
    focus: str  # the key of the job the tree was asked for
    limits: FlowLimits
    # The root has a parent the climb did not reach (``limits.climb`` parents followed).
    root_has_parent: bool = False
    nodes_read: int = 0
    budget_spent: bool = False  # the node budget stopped the read before the depth did

    def nodes(self) -> list[FlowNode]:
        return list(self.root.walk())


def split_job_key(key: str) -> tuple[str, str]:
    """(queue key prefix ending in ``:``, job id) as BullMQ's scripts split a job key: the id is
    what follows the last ``:`` (``getJobIdFromKey``), so this is where its scripts look."""
    head, _sep, job_id = key.rpartition(":")
    return head + ":", job_id


def cut(text: str) -> str:
    return text if len(text) <= OUTCOME_CAP else text[: OUTCOME_CAP - 1] + "…"
