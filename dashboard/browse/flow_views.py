"""The flow page: the flow a job belongs to as a tree across queues (``queues.flows``), each
node with its state, flag, reason or return value, and the actions an operator may take on it.
The tree is read within stated bounds; the job page's flow section links here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.accounts import scopes
from dashboard.accounts.auth import api_auth
from dashboard.browse import selectors as reads
from dashboard.web.errors import JsonResponse, api_errors, page_errors
from queues.flows import FlowNode, FlowTree
from queues.keys import QueueRef

# The job actions a node of the tree offers (where the registry offers them for its state).
FLOW_NODE_ACTIONS = ("retry", "discard", "remove-child-dependency", "remove-unprocessed")


@dataclass
class FlowRow:
    """A node as the page shows it: where it links to, whether this user may see what it holds."""

    node: FlowNode
    queue: QueueRef | None  # None: under a prefix this connection does not watch
    job_id: str
    visible: bool
    focus: bool
    children: list[FlowRow] = field(default_factory=list)


def rows_of(user, connection: str, tree: FlowTree) -> FlowRow:
    sees_all = not scopes.is_scoped(user)

    def row(node: FlowNode) -> FlowRow:
        parts = reads.link_for_job_key(connection, node.key)
        ref = QueueRef(connection, parts[0], parts[1]) if parts else None
        visible = scopes.may_see(user, ref) if ref else sees_all
        job_id = parts[2] if parts else node.id
        return FlowRow(node, ref, job_id, visible, node.key == tree.focus, [row(child) for child in node.children])

    return row(tree.root)


@require_GET
@page_errors
def job_flow(request, connection, prefix, name, job_id):
    queue = reads.resolve(request.user, connection, prefix, name)
    from_here = request.GET.get("from") == "here"
    tree = reads.job_flow(queue, job_id, from_root=not from_here)
    context = {
        "queue": queue,
        "job_id": job_id,
        "tree": tree,
        "limits": tree.limits,
        "root": rows_of(request.user, connection, tree),
        "from_here": from_here,
        # The flow actions change jobs of other queues: refused to scoped users, so not drawn.
        "flow_actions": FLOW_NODE_ACTIONS[:2] if scopes.is_scoped(request.user) else FLOW_NODE_ACTIONS,
    }
    return render(request, "browse/flow.html", context)


def node_json(row: FlowRow) -> dict:
    """A node for the API: a node of a queue the user may not see is its key alone."""
    n = row.node
    if not row.visible:
        return {"key": n.key, "hidden": True, "children": [node_json(c) for c in row.children]}
    return {
        "key": n.key,
        "queue": row.queue.name if row.queue else None,
        "id": row.job_id,
        "exists": n.exists,
        "state": n.state,
        "name": n.name,
        "flag": n.flag or None,
        "relation": n.relation or None,
        "failed_reason": n.failed_reason or None,
        "return_value": n.return_value or None,
        "counts": n.counts,
        "not_shown": n.not_shown,
        "children": [node_json(c) for c in row.children],
    }


@require_GET
@api_auth
@api_errors
def api_job_flow(request, connection, prefix, name, job_id):
    """The flow page as JSON: ``from=here`` as on the page."""
    queue = reads.resolve(request.user, connection, prefix, name)
    tree = reads.job_flow(queue, job_id, from_root=request.GET.get("from") != "here")
    return JsonResponse(
        {
            "focus": tree.focus,
            "limits": asdict(tree.limits),
            "root_has_parent": tree.root_has_parent,
            "budget_spent": tree.budget_spent,
            "nodes_read": tree.nodes_read,
            "root": node_json(rows_of(request.user, connection, tree)),
        }
    )
