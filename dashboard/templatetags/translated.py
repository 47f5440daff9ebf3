"""Translation at render time: ``{{ code|label }}`` names a data code (a state, an outcome, a
severity) in the active language; ``{{ text|translated }}`` translates text marked in the
framework-free ``queues/`` package (``queues.messages``)."""

from __future__ import annotations

from django import template

from dashboard.core import i18n, labels

register = template.Library()


@register.filter
def label(code):
    return labels.label(code)


@register.filter
def translated(text):
    return i18n.translate(text)
