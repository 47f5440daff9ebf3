"""Reading a flow as a tree (``queues.flows``) with plain commands, one pipelined round trip
per level, within ``FlowLimits``.

Each node costs a fixed number of commands whatever the queues hold: its hash fields, its state
(``ZSCORE`` in the sorted sets; ``LPOS`` in the lists bounded by ``MAXLEN``, so a job deep in a
long ``wait`` is not searched for), its children's counts (``SCARD``/``HLEN``/``ZCARD``) and at
most about ``children`` of each kind (``SSCAN``/``HSCAN`` from cursor 0 with that ``COUNT``, as
``Job.getDependencies`` pages them; ``ZRANGE`` for ``:unsuccessful``). Child keys are split as
BullMQ's scripts split them (the id follows the last ``:``), so a child in another queue, even
under a prefix this connection does not watch, is read where BullMQ would look for it. Every
command names keys of one job or one queue: on a Cluster, the cluster client's pipeline sends
each to the node owning its slot."""

from __future__ import annotations

from typing import Any

import redis

from ..flows import (
    IGNORED,
    PENDING,
    PROCESSED,
    RELATION_ORDER,
    RETURN_VALUE_READ_CAP,
    UNSUCCESSFUL,
    FlowLimits,
    FlowNode,
    FlowTree,
    cut,
    split_job_key,
)
from ..jobs import SUMMARY_FIELDS, summary_or_unreadable
from ..redact import Redactor
from ..text import to_text
from . import replies

STATE_SETS = ("completed", "failed", "delayed", "prioritized", "waiting-children")
STATE_LISTS = (("active", "active"), ("wait", "waiting"), ("paused", "waiting"))
LPOS_MAXLEN = 1000  # entries of a list searched for a node (a job further down reads by its lock)
_REASON = SUMMARY_FIELDS.index("failedReason")
_PER_NODE = 2 + len(STATE_SETS) + len(STATE_LISTS) + 1 + 4 + 4
# What each of a node's replies reads as when its command failed (a key of another type).
_DEFAULTS: tuple[Any, ...] = (
    [None] * len(SUMMARY_FIELDS),
    0,
    *[None] * (len(STATE_SETS) + len(STATE_LISTS)),
    0,
    0,
    0,
    0,
    0,
    [],
    (0, {}),
    (0, []),
    (0, {}),
)


def _or(reply, default):
    return default if isinstance(reply, Exception) else reply


def find_root(client: redis.Redis, key: str, *, climb: int) -> tuple[str, bool]:
    """The topmost ancestor of ``key`` within ``climb`` parents (one round trip each), and
    whether it still has a parent the climb did not reach. A parent that is not a job's hash
    (gone, or another kind of key a hostile ``parentKey`` names) ends it."""
    seen = {key}
    current = key
    for _step in range(climb + 1):
        parent = to_text(client.hget(current, "parentKey"))
        if not parent or parent in seen or to_text(client.type(parent)) != "hash":
            return current, False
        if _step == climb:
            return current, True
        seen.add(parent)
        current = parent
    return current, False


def read_flow(
    client: redis.Redis, key: str, *, limits: FlowLimits, redactor: Redactor, from_root: bool = True
) -> FlowTree:
    """The flow ``key`` belongs to, from its topmost ancestor (or from ``key`` itself)."""
    if from_root:
        root_key, above = find_root(client, key, climb=limits.climb)
    else:
        root_key = key
        parent = to_text(client.hget(key, "parentKey"))
        above = bool(parent) and bool(client.exists(parent))
    root = FlowNode(key=root_key, id=split_job_key(root_key)[1])
    tree = FlowTree(root=root, focus=key, limits=limits, root_has_parent=above)
    level, seen, depth = [root], {root_key}, 0
    hints: dict[str, str] = {}  # child key -> its return value or reason as its parent recorded it
    while level:
        children = _read_level(client, level, limits=limits, redactor=redactor, hints=hints)
        tree.nodes_read += len(level)
        next_level: list[FlowNode] = []
        for node, keys in zip(level, children):
            if depth >= limits.depth:
                node.below_depth = node.child_total > 0
                continue
            for relation, child_key in keys:
                if child_key in seen:  # hostile data: a key listed twice or a cycle
                    continue
                if tree.nodes_read + len(next_level) >= limits.nodes:
                    tree.budget_spent = True
                    break
                seen.add(child_key)
                child = FlowNode(key=child_key, id=split_job_key(child_key)[1], relation=relation)
                node.children.append(child)
                next_level.append(child)
        level, depth = next_level, depth + 1
    _read_return_values(client, tree, redactor=redactor, hints=hints)
    return tree


def _read_level(
    client: redis.Redis, level: list[FlowNode], *, limits: FlowLimits, redactor: Redactor, hints: dict[str, str]
) -> list[list[tuple[str, str]]]:
    """Fill in each node of one level; each node's child keys to show, by relation, in order."""
    cap = limits.children
    pipe = client.pipeline(transaction=False)
    for node in level:
        base, job_id = split_job_key(node.key)
        pipe.hmget(node.key, SUMMARY_FIELDS)
        pipe.hstrlen(node.key, "returnvalue")
        for state in STATE_SETS:
            pipe.zscore(base + state, job_id)
        for name, _state in STATE_LISTS:
            pipe.lpos(base + name, job_id, maxlen=LPOS_MAXLEN)
        pipe.exists(node.key + ":lock")
        pipe.scard(node.key + ":dependencies")
        pipe.hlen(node.key + ":processed")
        pipe.hlen(node.key + ":failed")
        pipe.zcard(node.key + ":unsuccessful")
        pipe.zrange(node.key + ":unsuccessful", 0, cap - 1)
        pipe.hscan(node.key + ":failed", 0, count=cap)
        pipe.sscan(node.key + ":dependencies", 0, count=cap)
        pipe.hscan(node.key + ":processed", 0, count=cap)
    # A key of another type where a job or its records should be (hostile data) answers an
    # error for that command only: the node reads as missing, or its records as empty.
    replies_ = pipe.execute(raise_on_error=False)
    out = []
    for i, node in enumerate(level):
        r = [_or(reply, default) for reply, default in zip(replies_[i * _PER_NODE : (i + 1) * _PER_NODE], _DEFAULTS)]
        fields, rv_size = r[0], int(r[1] or 0)
        scores = r[2 : 2 + len(STATE_SETS)]
        positions = r[2 + len(STATE_SETS) : 2 + len(STATE_SETS) + len(STATE_LISTS)]
        locked = r[2 + len(STATE_SETS) + len(STATE_LISTS)]
        pending_n, processed_n, ignored_n, unsuccessful_n, unsuccessful = r[-8:-3]
        ignored, pending, processed = (scanned for _cursor, scanned in r[-3:])
        _fill(node, fields, rv_size, scores, positions, locked, redactor)
        node.counts = {UNSUCCESSFUL: unsuccessful_n, IGNORED: ignored_n, PENDING: pending_n, PROCESSED: processed_n}
        listed = {
            UNSUCCESSFUL: [to_text(k) for k in unsuccessful],
            IGNORED: sorted(to_text(k) for k in ignored),
            PENDING: sorted(to_text(k) for k in pending),
            PROCESSED: sorted(to_text(k) for k in processed),
        }
        for k, v in [*ignored.items(), *processed.items()]:
            hints[to_text(k)] = cut(redactor.text(to_text(v)))
        keys: list[tuple[str, str]] = []
        for relation in RELATION_ORDER:
            keys.extend((relation, k) for k in listed[relation][: cap - len(keys)])
        out.append(keys)
    return out


def _fill(node: FlowNode, fields, rv_size: int, scores, positions, locked, redactor: Redactor) -> None:
    summary = summary_or_unreadable(node.id, fields)
    node.exists = summary.exists
    if not summary.exists:
        node.state = "missing"
        return
    node.name = summary.name
    node.failure_rule = summary.parent_failure_rule
    node.parent_key = summary.parent_key
    node.return_value_size = rv_size
    found = next((state for state, score in zip(STATE_SETS, scores) if score is not None), None)
    if found is None:
        found = next((state for (_name, state), pos in zip(STATE_LISTS, positions) if pos is not None), None)
    if found is None:
        # Past LPOS_MAXLEN of the lists (or in none of them): a held lock means a worker has it.
        found = "active" if locked else "waiting"
    node.state = found
    if found == "failed" or node.relation in (IGNORED, UNSUCCESSFUL):
        node.failed_reason = cut(redactor.text(to_text(fields[_REASON])))


def _read_return_values(client: redis.Redis, tree: FlowTree, *, redactor: Redactor, hints: dict[str, str]) -> None:
    """Return values: a processed child's from its parent's record (read with the level), any
    other completed node's from its own hash in one more round trip, if not too long to read."""
    wanted = []
    for node in tree.nodes():
        if node.state != "completed":
            continue
        if node.key in hints and node.relation == PROCESSED:
            node.return_value = hints[node.key]
        elif 0 < node.return_value_size <= RETURN_VALUE_READ_CAP:
            wanted.append(node)
    if wanted:
        pipe = client.pipeline(transaction=False)
        for node in wanted:
            pipe.hget(node.key, "returnvalue")
        for node, value in zip(wanted, pipe.execute()):
            node.return_value = cut(redactor.text(to_text(replies.value(value) if value is not None else b"")))
