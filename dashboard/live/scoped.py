"""What a scoped user's websocket may relay (``dashboard.accounts.scopes``).

Live fragments are rendered once for everyone by the monitor (one server-side reader), so a
socket of a user who sees only some queues filters on its side: overview rows of their queues
only, and per-user versions of the fragments that list things across queues (the firing-alerts
banner), rendered by the feature that owns them (``per_user``: alerts registers its banner
at start-up, so this package needs nothing of alerts). Page sockets of queues outside the
scope are refused at connect (``page_visible``), so what else they receive is theirs already.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.apps import apps

from dashboard.accounts import scopes
from dashboard.connections.registry import get_registry
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from dashboard.live import channels as live
from queues.keys import QueueRef

ROW_START = '<tr id="row-'  # an overview row (templates/browse/overview.html#queue-row)
_ROWS = re.compile(r'(?=<tr id="row-)')  # a batch of rows is one message (channels.Publisher)
_ELEMENT = re.compile(r'^<\w+ id="([^"]+)"')

# element id -> f(user, language) -> html: fragments shared by every page that list things
# across queues, rendered per scoped user instead.
per_user: dict[str, Callable[[object, str], str]] = {}


def element_of(html: str) -> str | None:
    found = _ELEMENT.match(html)
    return found.group(1) if found else None


def split_rows(html: str) -> list[str] | None:
    """An overview message's rows (one or a batch), or None for any other fragment."""
    return [piece for piece in _ROWS.split(html) if piece] if html.startswith(ROW_START) else None


def visible_row_ids(user, client) -> set[str]:
    """The overview row ids of the queues ``user`` may see, from the lists the monitor
    publishes (the rows come from the monitor, so it has published its lists)."""
    ids = set()
    for name in get_registry().names:
        try:
            found = dash_redis.read_queue_list(client, name)
        except (DashboardRedisError, ValueError):
            found = None
        ids.update(live.row_id(q) for q in scopes.visible_queues(user, found or []))
    return ids


def page_visible(user, queue: QueueRef) -> bool:
    return scopes.role_on(user, queue) is not None


def task_visible(user, task_id: int) -> bool:
    """A bulk task's progress: its queue must be the user's (looked up by model name: the
    tasks belong to actions, a feature above this one)."""
    task = apps.get_model("dashboard", "BulkTask").objects.filter(pk=task_id).first()
    return task is not None and page_visible(user, QueueRef(task.connection, task.prefix, task.queue))
