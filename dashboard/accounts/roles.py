"""Who may do what. Three roles, as Django groups, each including the ones before it:

* viewer   — read everything (every logged-in user is at least a viewer);
* operator — act on jobs and queues (retry, discard, redrive, pause…);
* admin    — everything, including alert rules, channels and users. Superusers are admins.

``QUEUEWATCH_READ_ONLY=1`` turns every mutation of the monitored Redis off, whatever the role.
Views use ``role_required``; templates get ``can_operate`` / ``can_admin`` / ``read_only`` from
the context processor, to hide controls the user could not use anyway (the views still check).
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.exceptions import PermissionDenied

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)  # in increasing order of power


def role_of(user) -> str | None:
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    names = set(user.groups.values_list("name", flat=True))
    for role in reversed(ROLES):
        if role in names:
            return role
    return VIEWER


def has_role(user, role: str) -> bool:
    mine = role_of(user)
    return mine is not None and ROLES.index(mine) >= ROLES.index(role)


def read_only() -> bool:
    return bool(getattr(settings, "QUEUEWATCH_READ_ONLY", False))


def role_required(role: str, *, mutates_redis: bool = False):
    """403 unless the user has ``role``; with ``mutates_redis``, also 403 in read-only mode.
    (Login itself is enforced by the login middleware, or by ``api_auth`` for the API.)"""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, role):
                raise PermissionDenied(f"This needs the {role} role.")
            if mutates_redis and read_only():
                raise PermissionDenied("Queuewatch is in read-only mode (QUEUEWATCH_READ_ONLY).")
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def context(request) -> dict:
    user = getattr(request, "user", None)
    return {
        "can_operate": has_role(user, OPERATOR) and not read_only(),
        "can_admin": has_role(user, ADMIN),
        "read_only": read_only(),
    }
