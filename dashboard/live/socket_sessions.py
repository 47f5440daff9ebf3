"""A websocket lives only as long as the login session it was opened with: the one rule
(``standing_of``), and what makes open sockets apply it.

A socket is authorised when it opens, and a page may then stay open for days. So every socket
(``consumers.LiveConsumer``) checks its session again

* **at once** when the session ends here: logging out (``user_logged_out``) closes the sockets
  of that session; saving or deleting a user (deactivated, password changed, removed) makes each
  of that user's sockets check its session. Both travel through the channel layer, so they reach
  sockets held by every web process;
* **every** ``QUEUEWATCH_SOCKET_SESSION_CHECK_S`` seconds, for whatever ends a session without
  a signal (sessions removed from the store, users changed by a bulk update);
* **at the session's expiry**, so no socket outlives it.

A socket whose session has ended is closed with ``SIGNED_OUT`` (4401), which the page's script
shows as "signed out" and does not reconnect after.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from importlib import import_module

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
from django.contrib.auth.signals import user_logged_out
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from dashboard.live import channels as live

log = logging.getLogger("queuewatch.live")

SIGNED_OUT = 4401  # close code: no (longer a) valid session; static/queuewatch.js knows it
TELL_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Standing:
    """A session that still holds, and when it expires (None: the store does not say)."""

    expires_at: datetime | None

    def seconds_to_next_check(self, now: datetime | None = None) -> float:
        interval = float(settings.QUEUEWATCH_SOCKET_SESSION_CHECK_S)
        if self.expires_at is None:
            return interval
        # A moment past the expiry, so the check that follows finds the session expired.
        left = (self.expires_at - (now or timezone.now())).total_seconds() + 0.05
        return max(0.05, min(interval, left))


def standing_of(session_key: str | None, user_id) -> Standing | None:
    """The rule: the session is still in the store and unexpired, still signed in as
    ``user_id`` through a configured backend that still accepts the user (active, not
    deleted), and its password hash still matches (a password change ends the other sessions).

    As ``django.contrib.auth.get_user`` decides for a page request, but read-only: that one
    flushes or re-keys the session it checks, which a socket's check must never do to the
    browser's session."""
    if not session_key:
        return None
    found = _stored_session(session_key)
    if found is None:
        return None
    data, expires_at = found
    try:
        stored_id = get_user_model()._meta.pk.to_python(data[SESSION_KEY])
        backend_path = data[BACKEND_SESSION_KEY]
    except (KeyError, ValidationError):
        return None
    if str(stored_id) != str(user_id) or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    user = load_backend(backend_path).get_user(stored_id)
    if user is None or not user.is_active:
        return None
    session_hash = data.get(HASH_SESSION_KEY) or ""
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    if not session_hash or not any(constant_time_compare(session_hash, h) for h in hashes):
        return None
    return Standing(expires_at)


def _stored_session(session_key: str) -> tuple[dict, datetime | None] | None:
    """The session's data and expiry as stored now; None when it is gone or expired."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    if hasattr(store, "get_model_class"):  # database-backed: the row has the real expiry
        row = (
            store.get_model_class()
            .objects.filter(session_key=session_key, expire_date__gt=timezone.now())
            .values_list("session_data", "expire_date")
            .first()
        )
        return None if row is None else (store.decode(row[0]), row[1])
    data = store.load()  # other engines drop expired sessions themselves
    return (data, store.get_expiry_date()) if data else None


async def standing(scope) -> Standing | None:
    """The standing of a socket's session: the one its cookie named, for the user it opened as."""
    user, session = scope.get("user"), scope.get("session")
    if session is None or not getattr(user, "is_authenticated", False):
        return None
    return await database_sync_to_async(standing_of)(session.session_key, user.pk)


def groups_of(scope) -> list[str]:
    """The groups through which the end of this socket's session reaches it."""
    user, session = scope.get("user"), scope.get("session")
    groups = [live.session_group(session.session_key)] if session is not None and session.session_key else []
    return groups + ([live.user_group(user.pk)] if getattr(user, "is_authenticated", False) else [])


# --- telling open sockets -------------------------------------------------------------------


_sending: set[asyncio.Task] = set()  # sends started from async code, kept until done


def tell(group: str, message_type: str) -> None:
    """Best effort: with the channel layer away, the periodic check still closes the sockets."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        async_to_sync(_send)(group, message_type)
        return
    task = loop.create_task(_send(group, message_type))  # from async code: without blocking it
    _sending.add(task)
    task.add_done_callback(_sending.discard)


async def _send(group: str, message_type: str) -> None:
    try:
        layer = get_channel_layer()
        if layer is not None:
            # Bounded: a logout or a user's save must not hang on an unreachable dashboard Redis.
            await asyncio.wait_for(layer.group_send(group, {"type": message_type}), TELL_TIMEOUT_S)
    except Exception:
        log.warning("could not tell the sockets of %s that their session changed", group, exc_info=True)


def _logged_out(sender, request, user, **kwargs):
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        tell(live.session_group(session_key), live.SESSION_ENDED_TYPE)


def _user_changed(sender, instance, created=False, update_fields=None, **kwargs):
    # A login saves last_login only: nothing that could end a session.
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    # After the commit, so the sockets' checks read the change.
    group = live.user_group(instance.pk)
    transaction.on_commit(lambda: tell(group, live.SESSION_CHANGED_TYPE))


def connect_signals() -> None:
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="queuewatch-socket-logout")
    post_save.connect(_user_changed, sender=user_model, dispatch_uid="queuewatch-socket-user-saved")
    post_delete.connect(_user_changed, sender=user_model, dispatch_uid="queuewatch-socket-user-deleted")
