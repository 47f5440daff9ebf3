from django import template

from dashboard.actions.models import BulkTask

register = template.Library()


@register.simple_tag
def active_task(queue):
    """The pending or running bulk task of a queue (at most one), for a link to its progress."""
    return BulkTask.objects.filter(connection=queue.connection, prefix=queue.prefix, queue=queue.name,
                                   state__in=BulkTask.ACTIVE_STATES).first()
