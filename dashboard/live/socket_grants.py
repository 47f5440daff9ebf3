"""Open sockets follow a change of their user's roles and grants.

A socket decides at connect what its user may see: whether they are scoped, whether the page's
queue (or task) is theirs, and on a job page whether they get the operators' group (with the
actions). Those were kept for the socket's life, so a revoked grant went on streaming until the
page was reloaded. Now a saved or deleted ``QueueGrant``, and a user's groups changing (global
roles and group grants are groups), tell the sockets of every user concerned, through the channel
layer (every web process); each closes with ``RECONNECT`` (1012, "service restart"), which the
page's websocket extension reconnects after, and the new socket decides again.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from dashboard.accounts.models import QueueGrant
from dashboard.live import channels as live
from dashboard.live.socket_sessions import tell

RECONNECT = 1012  # htmx's ws extension reconnects after 1006, 1011, 1012 and 1013


def _tell_users(user_ids) -> None:
    groups = [live.user_group(pk) for pk in user_ids]
    # After the commit, so the reconnecting sockets read the change.
    transaction.on_commit(lambda: [tell(group, live.GRANTS_CHANGED_TYPE) for group in groups])


def _grant_changed(sender, instance: QueueGrant, **kwargs) -> None:
    if instance.user_id is not None:
        _tell_users([instance.user_id])
    elif instance.group_id is not None:
        _tell_users(list(get_user_model().objects.filter(groups=instance.group_id).values_list("pk", flat=True)))


def _memberships_changed(sender, instance, action: str, reverse: bool, pk_set, **kwargs) -> None:
    if action not in ("post_add", "post_remove", "pre_clear", "post_clear"):
        return
    if not reverse:  # user.groups changed
        _tell_users([instance.pk])
    elif action == "pre_clear":  # group.user_set.clear(): its members, before they are gone
        _tell_users([pk for pk in instance.user_set.values_list("pk", flat=True)])
    elif pk_set:
        _tell_users(pk_set)


def connect_signals() -> None:
    post_save.connect(_grant_changed, sender=QueueGrant, dispatch_uid="queuewatch-socket-grant-saved")
    post_delete.connect(_grant_changed, sender=QueueGrant, dispatch_uid="queuewatch-socket-grant-deleted")
    m2m_changed.connect(
        _memberships_changed, sender=get_user_model().groups.through, dispatch_uid="queuewatch-socket-groups"
    )
