"""Translatable text from framework-free code.

``queues/`` never imports Django, yet what it says (health-check titles, explanations and
findings; alert kind titles and help) is shown to people in their language. It marks those
strings with ``_`` — the name ``makemessages`` (xgettext) already looks for — which does not
translate: it returns a ``Message``, a ``str`` holding the English text, that also remembers its
message id and the values filled into it. The dashboard translates it at the edge, at render
time (``dashboard.core.i18n.translate``), so a result computed once (by the monitor, say) can be
shown in any language. Everything else (logs, JSON, /metrics, ``check_queues``) keeps using it
as the plain English string it is.
"""

from __future__ import annotations

import re


class Message(str):
    """English text (the ``str`` value) plus its message id and parameters, for translation."""

    msgid: str
    params: dict

    def __new__(cls, msgid: str, /, **params) -> Message:
        text = msgid.format(**params) if params else msgid
        obj = super().__new__(cls, text)
        obj.msgid = msgid
        obj.params = params
        return obj

    def __reduce__(self):  # pickles (and copies) keep the message id and parameters
        return (_rebuild, (self.msgid, self.params))

    def __str__(self):
        # ``str(error)`` of an exception raised with a message gives the message itself, so a
        # refusal re-raised at the edge (``InvalidInput(str(exc))``) is still translated there.
        return self


class Joined(str):
    """Several messages joined by a separator: the English text, and the parts to translate one
    by one."""

    parts: list
    separator: str

    def __new__(cls, parts, separator: str) -> Joined:
        parts = list(parts)
        obj = super().__new__(cls, separator.join(parts))
        obj.parts = parts
        obj.separator = separator
        return obj

    def __reduce__(self):
        return (Joined, (self.parts, self.separator))

    def __str__(self):  # as ``Message.__str__``
        return self


def _rebuild(msgid: str, params: dict) -> Message:
    return Message(msgid, **params)


def _(msgid: str, /, **params) -> Message:
    """Mark ``msgid`` for translation and fill ``{name}`` placeholders from ``params``. The
    placeholders stay in the message id, so translators can move them around."""
    return Message(msgid, **params)


def gettext_noop(msgid: str, /) -> str:
    """Mark ``msgid`` for ``makemessages`` where it is filled in later (a table of message ids
    that a function passes to ``_``); returns it unchanged."""
    return msgid


# Text kept as JSON (a bulk task's progress in the database) is translated when it is shown, so
# it keeps its message id and parameters: ``as_data`` gives the JSON form, ``from_data`` rebuilds
# the message (a plain string stays a string, as older rows hold).
_PLAIN = (int, float, bool, type(None))


def as_data(text, *, limit: int = 300):
    """``text`` as JSON-able data: ``{"msgid", "params"}`` for a ``Message``, ``{"parts",
    "separator"}`` for a ``Joined``, else a string. A text parameter longer than ``limit``
    characters is cut (a job id can be huge); numbers stay numbers."""
    if isinstance(text, Joined):
        return {"parts": [as_data(part, limit=limit) for part in text.parts], "separator": text.separator}
    if isinstance(text, Message):
        return {"msgid": text.msgid, "params": {k: as_data(v, limit=limit) for k, v in text.params.items()}}
    if isinstance(text, _PLAIN):
        return text
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def from_data(data):
    """The message ``as_data`` gave (its English text if the stored form cannot be filled in)."""
    if isinstance(data, dict):
        if "parts" in data:
            return Joined([from_data(part) for part in data.get("parts") or []], str(data.get("separator", " ")))
        if "msgid" in data:
            params = {str(k): from_data(v) for k, v in (data.get("params") or {}).items()}
            try:
                return Message(str(data["msgid"]), **params)
            except (KeyError, IndexError, ValueError):  # a stored form that does not fit its message id
                return str(data["msgid"])
    return data if isinstance(data, (str, *_PLAIN)) else str(data)


# Text recorded as English (an alert's summary is a database column read by people, webhooks and
# emails alike) is translated when shown by recognising which message made it: each message id
# becomes a pattern, its placeholders capturing the values. Rows written before a text was marked
# read the same, as long as the English is unchanged.
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class Recogniser:
    """Rebuilds ``Message``\\ s from their English text, for a fixed set of message ids; a value
    is itself recognised (a message filled into another) or handed to ``value`` (e.g. a
    duration written in words)."""

    def __init__(self, msgids, value=None):
        # The most literal text first: "{n} jobs waiting, {w} workers" before "{n} jobs waiting".
        ordered = sorted(set(msgids), key=lambda m: -len(_PLACEHOLDER.sub("", m)))
        self._patterns = [(m, self._pattern(m)) for m in ordered]
        self._value = value

    @staticmethod
    def _pattern(msgid: str) -> re.Pattern:
        parts, seen, last = [], set(), 0
        for match in _PLACEHOLDER.finditer(msgid):
            name = match.group(1)
            parts.append(re.escape(msgid[last : match.start()]))
            parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
            seen.add(name)
            last = match.end()
        parts.append(re.escape(msgid[last:]))
        return re.compile("".join(parts), re.DOTALL)

    def __call__(self, text, *, depth: int = 2):
        """The message whose English ``text`` is, or ``text`` itself."""
        if isinstance(text, (Message, Joined)) or not isinstance(text, str):
            return text
        for msgid, pattern in self._patterns:
            match = pattern.fullmatch(text)
            if match:
                params = {k: self._param(v, depth) for k, v in match.groupdict().items()}
                return Message(msgid, **params)
        return text

    def _param(self, value: str, depth: int):
        found = self(value, depth=depth - 1) if depth > 0 else value
        if found is value and self._value is not None:
            return self._value(value)
        return found
