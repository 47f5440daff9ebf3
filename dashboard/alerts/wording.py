"""What an alert recorded, in the reader's language: its summary and what silenced it. Both are
stored as English text (webhooks send them as they are); the messages that wrote them are known
(``queues.alert_kinds.summaries``; the silences' below), so pages and emails translate old rows
and new alike."""

from __future__ import annotations

from dashboard.core.i18n import translate
from queues.alert_kinds import summaries
from queues.messages import Recogniser, gettext_noop

# What silenced an alert (``Alert.silenced_by``), as the engine writes it (``active_silences``).
SILENCE = gettext_noop("silence by {author}: {comment}")
WINDOW = gettext_noop("maintenance window “{name}” until {until} UTC")
_silenced = Recogniser([SILENCE, WINDOW])


def summary_text(text) -> str:
    """``text`` in the active language, or as recorded when no summary message wrote it."""
    return translate(summaries.recognised(text or ""))


def silenced_by_text(text) -> str:
    """What silenced an alert, in the active language (as recorded when not one of ours)."""
    return translate(_silenced(text or "", depth=0))
