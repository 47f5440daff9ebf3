from django import template

from dashboard.actions import registry
from dashboard.actions.models import BulkTask
from dashboard.dead_letters import is_dead_letter_queue

register = template.Library()


@register.simple_tag
def active_task(queue):
    """The pending or running bulk task of a queue (at most one), for a link to its progress."""
    return BulkTask.objects.filter(connection=queue.connection, prefix=queue.prefix, queue=queue.name,
                                   state__in=BulkTask.ACTIVE_STATES).first()


@register.simple_tag(takes_context=True)
def offered_actions(context, scope, *, queue, job=None, snap=None):
    """The registered actions of ``scope`` ("job" or "queue") to offer on this page to this
    user, in registration order (``dashboard.actions.registry``)."""
    where = registry.Offer(queue=queue, is_dlq=is_dead_letter_queue(queue.name), job=job, snap=snap)
    return registry.offered(scope, where, user=context.get("user"))
