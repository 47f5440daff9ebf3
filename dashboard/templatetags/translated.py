"""Translation at render time: ``{{ code|label }}`` names a data code (a state, an outcome, a
severity) in the active language (``{% for code, n in counts|in_label_order %}`` lists counts by
code in one order whatever the database kept); ``{{ text|translated }}`` translates text marked in the
framework-free ``queues/`` package (``queues.messages``)."""

from __future__ import annotations

from django import template
from django.conf import settings

from dashboard.alerts.wording import silenced_by_text, summary_text
from dashboard.core import i18n, labels

register = template.Library()


@register.filter
def label(code):
    return labels.label(code)


@register.filter
def in_label_order(counts):
    return labels.in_label_order(counts)


@register.filter
def translated(text):
    return i18n.translate(text)


@register.filter
def alert_summary(text):
    """An alert's recorded summary in the active language (``dashboard.alerts.wording``)."""
    return summary_text(text)


@register.filter
def silenced_by(text):
    """What silenced an alert, in the active language (``dashboard.alerts.wording``)."""
    return silenced_by_text(text)


@register.simple_tag(takes_context=True)
def chosen_language(context):
    """The language switcher's current choice: a language code, or ``AUTOMATIC``."""
    request = context.get("request")
    return (i18n.chosen_language(request) if request is not None else None) or i18n.AUTOMATIC


@register.simple_tag
def automatic_language():
    return i18n.AUTOMATIC


@register.simple_tag
def own_language_names():
    """(code, name) of each language, named in itself (``LANGUAGES``), whatever the page's language:
    Django's ``get_available_languages`` would translate "English" into Arabic."""
    return list(settings.LANGUAGES)
