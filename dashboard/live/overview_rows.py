"""Which overview rows someone looks at, so the monitor renders only those.

An overview page shows one page of the queues (100 rows), but at 10,000 queues with 1,000 of
them changing each second, rendering every changed queue's row was more than a core of monitor
CPU, and every open overview tab was sent every row. Now the page rendering an overview stores
the queues it shows as a *view* (``remember``: a signed document in the dashboard Redis, named by
a digest of its queues, so identical pages share one), the page's script sends that view's name
over its socket when the socket opens and whenever its tables are replaced (a sort, a filter,
another page), and the socket watches those rows (``dash_redis.Watch.overview_row``). The monitor
renders a row only while it is watched; rows nobody views cost nothing, whatever the number of
queues. A queue that appears is announced to every overview socket instead
(``fragments.queues_added``), and pages reload their tables once.
"""

from __future__ import annotations

import hashlib
import json
import re

from dashboard.accounts import scopes
from dashboard.core import dash_redis
from dashboard.core.dash_redis import DashboardRedisError
from queues.keys import QueueRef

VIEW_KEY = "queuewatch:overview-view:"
VIEW_TTL_S = 3600  # kept again by every socket showing it (``rows_of``), at each watch refresh
MAX_ROWS = 1000  # more than an overview page holds: a view is never bigger than this
MAX_MESSAGE = 200  # bytes: the page sends {"view": "<name>"} and nothing else
_NAME = re.compile(r"[0-9a-f]{32}")


def remember(queues: list[QueueRef]) -> str:
    """Store the queues a page shows; the view's name ("" when the dashboard Redis is away: the
    page then has no live rows, as it has no socket)."""
    members = [[q.connection, q.prefix, q.name] for q in queues[:MAX_ROWS]]
    name = hashlib.sha256(json.dumps(members).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    try:
        dash_redis.put_document(dash_redis.dashboard_redis(), VIEW_KEY + name, members, ex=VIEW_TTL_S)
    except DashboardRedisError:
        return ""
    return name


def view_named(text: str | None) -> str | None:
    """The view a socket message names (``{"view": "<name>"}``), or None for anything else."""
    if not text or len(text) > MAX_MESSAGE:
        return None
    try:
        name = json.loads(text).get("view")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and _NAME.fullmatch(name) else None


def rows_of(client, name: str, user) -> list[QueueRef] | None:
    """The queues of a view that ``user`` may see (None: no such view), keeping the view for
    another ``VIEW_TTL_S``."""
    key = VIEW_KEY + name
    members = dash_redis.get_document(client, key)
    if not isinstance(members, list):
        return None
    queues = [
        QueueRef(*m)
        for m in members[:MAX_ROWS]
        if isinstance(m, list) and len(m) == 3 and all(isinstance(part, str) for part in m)
    ]
    dash_redis.put_document(client, key, members[:MAX_ROWS], ex=VIEW_TTL_S)
    return scopes.visible_queues(user, queues)
