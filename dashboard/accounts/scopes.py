"""Which queues a user may see, and with which role: the one home of the scoped-grant rule.

* A **global role** is what ``role_of`` always meant: the highest role group (viewer,
  operator, admin; superusers are admins). A user in no role group is a viewer everywhere —
  unless grants exist for them (directly or through a group): then they have **no** global
  role, and see only the queues their grants match.
* A **grant** (``QueueGrant``) gives a user or a group a role on one connection (or any) and
  the queue names matching a glob (or any), matched like alert rules' globs (``fnmatchcase``).
* A user's **role on a queue** (``role_on``) is the highest of their global role and the roles
  of the grants matching the queue; None means the queue is not theirs to see: pages and the
  API answer 404 for it (as for a queue that does not exist, so names do not leak), lists leave
  it out.

Matching is by names only (connection, queue name), so it never reads Redis, and a queue that
does not exist yet is judged like one that does. A request made with an API token is capped by
the token's scopes (``auth.role_of``), on every queue alike.

The grants are read once per user object (one query) and kept on it: a request, or a
websocket for its lifetime, sees the grants as they were when it started.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q

from dashboard.accounts.models import SCOPE_ROLES, QueueGrant
from queues.keys import QueueRef

ROLES = ("viewer", "operator", "admin")  # in increasing order of power (auth.ROLES)
_CACHE = "_queuewatch_grants"


@dataclass(frozen=True)
class Scope:
    """One grant, as matching needs it."""

    role: str
    connection: str = ""  # "" = every connection
    queue_glob: str = ""  # "" or "*" = every queue

    def matches(self, queue: QueueRef) -> bool:
        if self.connection and self.connection != queue.connection:
            return False
        return self.queue_glob in ("", "*") or fnmatch.fnmatchcase(queue.name, self.queue_glob)


def grants_of(user) -> tuple[Scope, ...]:
    """The user's grants, their own and their groups' (read once per user object)."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "pk", None):
        return ()
    cached = getattr(user, _CACHE, None)
    if cached is None:
        rows = QueueGrant.objects.filter(Q(user_id=user.pk) | Q(group__user__pk=user.pk)).distinct()
        cached = tuple(Scope(r.role, r.connection, r.queue_glob) for r in rows)
        setattr(user, _CACHE, cached)
    return cached


def global_role(user) -> str | None:
    """The role on every queue (and on what belongs to no queue): None for a scoped user."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return ROLES[-1]
    names = set(user.groups.values_list("name", flat=True))
    for role in reversed(ROLES):
        if role in names:
            return role
    return None if grants_of(user) else ROLES[0]


def is_scoped(user) -> bool:
    """A user who sees only some queues (grants, no global role)."""
    return getattr(user, "is_authenticated", False) and user.is_active and global_role(user) is None


def highest(*roles: str | None) -> str | None:
    known = [r for r in roles if r is not None]
    return max(known, key=ROLES.index) if known else None


def own_role_on(user, queue: QueueRef) -> str | None:
    """The highest of the global role and the matching grants' roles (before a token's cap)."""
    mine = global_role(user)
    if mine is None and not (getattr(user, "is_authenticated", False) and user.is_active):
        return None
    if mine == ROLES[-1]:
        return mine
    return highest(mine, *(g.role for g in grants_of(user) if g.matches(queue)))


def role_on(user, queue: QueueRef) -> str | None:
    """The user's role on ``queue``, capped by a token's scopes; None: not theirs to see."""
    return capped(user, own_role_on(user, queue))


def capped(user, role: str | None) -> str | None:
    """``role`` capped by the scopes of the token the request was made with (if any)."""
    cap = token_cap(user)
    if role is None or cap is None:
        return None
    return ROLES[min(ROLES.index(role), ROLES.index(cap))]


def token_cap(user) -> str | None:
    """The highest role a request's token allows (admin without a token); None for a token
    without read, act or admin."""
    given = getattr(user, "token_scopes", None)
    if given is None:
        return ROLES[-1]
    return next((r for scope, r in SCOPE_ROLES if scope in given), None)


def may_see(user, queue: QueueRef) -> bool:
    return role_on(user, queue) is not None


def visible_queues(user, refs: Iterable[QueueRef]) -> list[QueueRef]:
    """``refs`` the user may see, in their order."""
    refs = list(refs)
    if global_role(user) is not None:
        return refs
    return [r for r in refs if may_see(user, r)]


def sees_everything(user) -> bool:
    """A global role (whatever the grants add): nothing to filter."""
    return global_role(user) is not None


def sees_connection(user, connection: str) -> bool:
    """Whether ``connection`` is listed for the user even without a queue of theirs on it (a
    global role, or a grant naming it)."""
    return sees_everything(user) or any(g.connection == connection for g in grants_of(user))


def covers(user, *, connection: str, queue_glob: str, role: str) -> bool:
    """Whether every queue a (connection, glob) scope — an alert rule's, a silence's — can
    match is one the user holds ``role`` on: a global role that high, or one grant at least
    that high whose scope contains it (the same connection or any; the same glob, a plain
    name the grant's glob matches, or a grant on every queue)."""
    mine = capped(user, global_role(user))
    if mine is not None and ROLES.index(mine) >= ROLES.index(role):
        return True
    cap = token_cap(user)
    if cap is None or ROLES.index(cap) < ROLES.index(role):
        return False
    plain = queue_glob not in ("", "*") and not any(c in queue_glob for c in "*?[")
    for g in grants_of(user):
        if ROLES.index(g.role) < ROLES.index(role):
            continue
        if g.connection and g.connection != connection:
            continue
        every = g.queue_glob in ("", "*")
        if every or g.queue_glob == queue_glob or (plain and fnmatch.fnmatchcase(queue_glob, g.queue_glob)):
            return True
    return False


def queue_filter(user, *, connection: str = "connection", queue: str = "queue") -> Q | None:
    """A database filter for rows naming a queue (audit entries, alerts, bulk tasks) that the
    user may see; None when they see every queue. ``connection`` and ``queue`` name the fields."""
    if sees_everything(user):
        return None
    found = Q(pk__in=[])  # no grant: nothing
    for g in grants_of(user):
        part = Q()
        if g.connection:
            part &= Q(**{connection: g.connection})
        if g.queue_glob not in ("", "*"):
            part &= Q(**{f"{queue}__regex": glob_regex(g.queue_glob)})
        found |= part
    return found


def audit_filter(user) -> Q | None:
    """The audit rows a scoped user reads: those of their queues, and their own rows that name
    no queue (their refusals, their tokens); None when they read every row."""
    only = queue_filter(user)
    if only is None:
        return None
    return only | Q(queue="", connection="", user_id=user.pk)


def glob_regex(glob: str) -> str:
    """``fnmatchcase``'s glob as a regular expression both SQLite (Python's ``re``) and
    PostgreSQL (POSIX) read alike: ``*``, ``?`` and ``[…]`` classes; everything else literal."""
    out, i = ["^"], 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "]") else i + 1)) != -1:
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(c) if not c.isalnum() else c)
        i += 1
    out.append("$")
    return "".join(out)
