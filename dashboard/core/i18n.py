"""The language of a request, a websocket and a message: one home for the rule.

1. The logged-in user's saved choice (``UserPreference``, copied into the session at login so
   requests do not query it: ``dashboard.accounts.language``), set by the language switcher.
2. Otherwise Django's rule (``LocaleMiddleware``): the switcher's cookie, then the browser's
   ``Accept-Language``, then ``LANGUAGE_CODE`` (``QUEUEWATCH_LANGUAGE``).

Live fragments are rendered once per configured language by the monitor
(``dashboard.live.fragments``); a websocket joins the groups of its page's language, decided by
``language_for_scope`` with the same rule. Framework-free code marks its text with
``queues.messages._``; ``translate`` turns that into the active language here, at the edge.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from django.utils.functional import Promise

from queues.messages import Joined, Message, from_data

SESSION_KEY = "queuewatch_language"
AUTOMATIC = "auto"  # the switcher's choice of no language: the browser's decides


def supported(language: str | None) -> str | None:
    """``language`` if it is one of ``LANGUAGES`` (or a variant of one), else None."""
    if not language:
        return None
    try:
        return translation.get_supported_language_variant(language)
    except LookupError:
        return None


class UserLanguageMiddleware:
    """After ``LocaleMiddleware`` and authentication: a logged-in user's saved language wins
    over the cookie and the browser (they may log in from a browser set to another one)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        language = supported(session.get(SESSION_KEY)) if session is not None else None
        if language and language != translation.get_language():
            translation.activate(language)
            request.LANGUAGE_CODE = language
        return self.get_response(request)


def language_for_scope(scope) -> str:
    """The language a websocket's page was rendered in: the same rule as for a request."""
    session = scope.get("session")
    saved = supported(session.get(SESSION_KEY)) if session is not None else None
    if saved:
        return saved
    request = HttpRequest()
    request.COOKIES = dict(scope.get("cookies") or {})
    headers = dict(scope.get("headers") or [])
    accept = headers.get(b"accept-language")
    if accept:
        request.META["HTTP_ACCEPT_LANGUAGE"] = accept.decode("latin-1")
    return translation.get_language_from_request(request) or settings.LANGUAGE_CODE


def chosen_language(request) -> str | None:
    """The language the visitor chose with the switcher (saved for them, or the switcher's
    cookie), or None: "automatic", the browser's ``Accept-Language`` decides."""
    session = getattr(request, "session", None)
    saved = supported(session.get(SESSION_KEY)) if session is not None else None
    return saved or supported(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME))


def other_languages() -> list[str]:
    """Every configured language but the default one."""
    return [code for code, _ in settings.LANGUAGES if code != settings.LANGUAGE_CODE]


def translate(text):
    """Text marked in ``queues/`` (a ``Message``), translated into the active language with its
    parameters filled in (parameters that are messages are translated too); also a message kept
    as JSON (``queues.messages.as_data``). Plain strings and Django's lazy strings pass through."""
    if isinstance(text, dict):
        text = from_data(text)
    if isinstance(text, Joined):
        return text.separator.join(translate(part) for part in text.parts)
    if isinstance(text, Message):
        params = {k: translate(v) for k, v in text.params.items()}
        return translation.gettext(text.msgid).format(**params) if params else translation.gettext(text.msgid)
    if isinstance(text, Promise):
        return str(text)
    return text
