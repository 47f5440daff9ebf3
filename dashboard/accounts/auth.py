"""Who a request is and what it may do: the one home of every access rule.

* **Session.** Pages use Django's login session. ``LoginRequiredMiddleware`` makes every URL
  need it, except views marked ``login_not_required``: the login page, and the JSON API and
  ``/metrics``, which answer 401 themselves instead of redirecting (``api_auth``).
* **Bearer token.** The API (and ``/metrics``) also accept ``Authorization: Bearer <token>``,
  tokens from ``manage.py api_token`` (stored hashed: ``ApiToken``), until they expire or are
  revoked. A token's scopes cap its user's role (``role_of``): ``read`` → viewer, ``act`` →
  operator, ``admin`` → admin; ``metrics`` alone opens only ``/metrics``. ``bearer_token`` is the
  only parser of that header. Token calls carry no cookie, so they are exempt from CSRF; an
  API call authenticated by a session cookie must pass Django's CSRF check like a form post.
* **Roles.** Three, as Django groups, each including the ones before it: viewer (read
  everything; every logged-in user), operator (act on jobs and queues), admin (alert rules,
  channels, users; superusers are admins).
* **Scoped grants.** A role can also be granted on one connection and a glob of queue names
  (``QueueGrant``, read by ``scopes``): ``role_of(user, queue)`` is the highest of the global
  role and the matching grants; a user with grants and no role group has no global role and
  sees only those queues (``require_visible``: others are 404, as if they did not exist).
* **Read-only mode.** ``QUEUEWATCH_READ_ONLY=1`` refuses every mutation of the monitored Redis,
  whatever the role.

``refusal`` is the one rule for roles and read-only mode; pages apply it with ``role_required``
(403 page), the API with ``api_role_required`` (403 JSON), per-action checks with ``require``
(the actions registry says which role each action needs), and templates read it through
``context`` (to hide controls; the views still check).
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt

from dashboard.accounts import scopes
from dashboard.accounts.models import METRICS, ApiToken
from dashboard.web.errors import JsonResponse
from queues.errors import QueueNotFound
from queues.keys import QueueRef

VIEWER, OPERATOR, ADMIN = "viewer", "operator", "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)  # in increasing order of power
BEARER = "Bearer "


# --- roles and read-only mode -------------------------------------------------------------


def role_of(user, queue: QueueRef | None = None) -> str | None:
    """The user's global role, or with ``queue`` their role on that queue (``scopes``: the
    highest of the global role and the grants matching it; None: not theirs to see); for a
    request made with a token, capped by the token's scopes."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if queue is not None:
        return scopes.role_on(user, queue)
    return scopes.capped(user, scopes.global_role(user))


token_cap = scopes.token_cap


def token_may_scrape(user) -> bool:
    """/metrics: a session may; a token needs the ``metrics`` scope."""
    scopes = getattr(user, "token_scopes", None)
    return scopes is None or METRICS in scopes


def has_role(user, role: str, queue: QueueRef | None = None) -> bool:
    mine = role_of(user, queue)
    return mine is not None and ROLES.index(mine) >= ROLES.index(role)


def read_only() -> bool:
    return bool(getattr(settings, "QUEUEWATCH_READ_ONLY", False))


def refusal(user, *, role: str, mutates_redis: bool = False, queue: QueueRef | None = None) -> str | None:
    """Why ``user`` may not do something that needs ``role`` (and, with ``mutates_redis``,
    writes to the monitored Redis) — on ``queue`` when given; None when they may."""
    return role_refusal(role_of(user, queue), role=role, mutates_redis=mutates_redis)


def role_refusal(mine: str | None, *, role: str, mutates_redis: bool = False) -> str | None:
    """``refusal`` for whoever has the role ``mine`` (a live fragment rendered once for every
    viewer with that role)."""
    if mine is None or ROLES.index(mine) < ROLES.index(role):
        return _("This needs the %(role)s role.") % {"role": role}
    if mutates_redis and read_only():
        return _("Queuewatch is in read-only mode (QUEUEWATCH_READ_ONLY).")
    return None


def require(user, *, role: str, mutates_redis: bool = False, target: str = "", queue: QueueRef | None = None) -> None:
    """``refusal`` as ``PermissionDenied`` (a 403 page; ``api_errors`` makes it 403 JSON),
    recorded in the audit log. With ``queue``: a queue the user may not see is
    ``QueueNotFound`` (404, like a queue that does not exist), then the role on it applies."""
    if queue is not None:
        require_in_scope(user, queue, target=target)
    why = refusal(user, role=role, mutates_redis=mutates_redis, queue=queue)
    if why:
        audit_refusal(user, kind="role", target=target, message=why)
        raise PermissionDenied(why)


def require_visible(user, queue: QueueRef) -> None:
    """``QueueNotFound`` for a queue outside the user's scope: the same answer as for a queue
    that does not exist, so a scoped user cannot learn other teams' queue names."""
    if role_of(user, queue) is None and getattr(user, "is_authenticated", False):
        raise QueueNotFound(queue.connection, queue.prefix, queue.name)


def require_in_scope(user, queue: QueueRef, *, target: str, via: str = "") -> None:
    """``require_visible`` for an attempt to act: also recorded in the audit log
    (``refused.scope``), as an attempt on another team's queue."""
    if role_of(user, queue) is None and getattr(user, "is_authenticated", False):
        audit_refusal(user, kind="scope", via=via, target=target, message="queue outside the user's scope")
        raise QueueNotFound(queue.connection, queue.prefix, queue.name)


def queue_of(kwargs: dict) -> QueueRef | None:
    """The queue a routed view is about (every queue route names it the same way)."""
    if {"connection", "prefix", "name"} <= kwargs.keys():
        return QueueRef(kwargs["connection"], kwargs["prefix"], kwargs["name"])
    return None


def audit_refusal(user, *, kind: str, target: str, message: str, via: str = "") -> None:
    """Refusals (role, read-only, CSRF) are audit rows too: ``refused.role``, ``refused.csrf``."""
    from dashboard.audit import log as audit  # lazily: the audit module loads models

    audit.record_refusal(user=user, kind=kind, via=via, target=target, message=message)


def role_required(role: str, *, mutates_redis: bool = False):
    """Page views: 403 unless the user passes ``refusal`` (on the view's queue, for a queue
    route: 404 when it is outside their scope). (Login itself is enforced by the login
    middleware.)"""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            try:
                require(
                    request.user,
                    role=role,
                    mutates_redis=mutates_redis,
                    target=f"{request.method} {request.path}",
                    queue=queue_of(kwargs),
                )
            except QueueNotFound as exc:
                raise Http404(str(exc)) from None
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def context(request) -> dict:
    """Template context processor: which controls to show."""
    user = getattr(request, "user", None)
    can_admin = has_role(user, ADMIN)
    # On a queue's pages, the role on that queue (a grant may raise it there).
    match = getattr(request, "resolver_match", None)
    queue = queue_of(match.kwargs) if match else None
    return {
        "can_operate": refusal(user, role=OPERATOR, mutates_redis=True, queue=queue) is None,
        # Cancelling a bulk task writes nothing to Redis: allowed in read-only mode (the brake).
        "can_cancel_tasks": refusal(user, role=OPERATOR, queue=queue) is None,
        "scoped": scopes.is_scoped(user),
        "can_admin": can_admin,
        "read_only": read_only(),
        # Only admins can fix where the dashboard Redis is (docs/operations.md, "Trust model").
        "dashboard_redis_shared_with": settings.QUEUEWATCH_DASHBOARD_REDIS_SHARED_WITH if can_admin else [],
    }


# --- bearer tokens and the API ------------------------------------------------------------


def bearer_token(request) -> str | None:
    """The token of an ``Authorization: Bearer …`` header ("" if empty), None without one."""
    header = request.headers.get("Authorization", "")
    if not header.startswith(BEARER):
        return None
    return header[len(BEARER) :].strip()


def authenticate(request) -> str | None:
    """Bearer token or session: sets ``request.user`` from a token when one is sent (a token
    wins over a cookie). None when the request is authenticated, else why not."""
    token = bearer_token(request)
    if token is not None:
        row = ApiToken.valid(token) if token else None
        if row is None:
            return "invalid, expired or revoked token"
        row.user.token_scopes = tuple(row.scopes)  # caps role_of for this request
        request.user = row.user
        return None
    return None if request.user.is_authenticated else "authentication required"


def unauthorized(message: str) -> JsonResponse:
    response = JsonResponse({"error": "unauthorized", "message": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="queuewatch"'
    return response


def forbidden(message: str) -> JsonResponse:
    return JsonResponse({"error": "forbidden", "message": message}, status=403)


def api_auth(view):
    """API views: 401 JSON unless authenticated by a bearer token or a session."""

    @login_not_required
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        why = authenticate(request)
        if why:
            return unauthorized(why)
        if token_cap(request.user) is None:  # a token without read, act or admin (e.g. metrics only)
            return forbidden(_("This token's scopes do not include the API (read, act or admin)."))
        return view(request, *args, **kwargs)

    return wrapper


def api_csrf(view):
    """API views that change something: a caller authenticated by a session cookie must pass
    Django's CSRF check (403 JSON); token calls carry no cookie, so a forged cross-site request
    cannot use them. CSRF-exempt for the middleware because the check happens here, after
    ``api_auth`` has answered anonymous callers with 401."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if bearer_token(request) is None and CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {}):
            audit_refusal(
                request.user,
                kind="csrf",
                via="api",
                target=f"{request.method} {request.path}",
                message="CSRF check failed",
            )
            return forbidden("CSRF check failed: send the X-CSRFToken header, or use a bearer token.")
        return view(request, *args, **kwargs)

    return wrapper


def api_role_required(role: str, *, mutates_redis: bool = False):
    """API views: ``refusal`` as 403 JSON (on the view's queue, for a queue route: 404 JSON
    when it is outside the caller's scope)."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            queue = queue_of(kwargs)
            try:
                if queue is not None:
                    require_in_scope(request.user, queue, target=f"{request.method} {request.path}", via="api")
            except QueueNotFound as exc:
                return JsonResponse({"error": "not_found", "message": str(exc)}, status=404)
            why = refusal(request.user, role=role, mutates_redis=mutates_redis, queue=queue)
            if why:
                audit_refusal(
                    request.user, kind="role", via="api", target=f"{request.method} {request.path}", message=why
                )
                return forbidden(why)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def may_manage_token(user, token) -> bool:
    """A user sees and revokes their own tokens; an admin, everyone's."""
    return token.user_id == getattr(user, "pk", None) or has_role(user, ADMIN)
