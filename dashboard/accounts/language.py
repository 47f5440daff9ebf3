"""A user's saved language: kept when they choose one, restored when they log in (the rule for
which language a request gets, and the session key it is kept under: ``dashboard.core.i18n``)."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from dashboard.accounts.preferences import UserPreference
from dashboard.core.i18n import SESSION_KEY, supported


def remember(request, language: str) -> None:
    """The switcher's choice, kept for the user (all their browsers) and this session."""
    request.session[SESSION_KEY] = language
    if request.user.is_authenticated:
        UserPreference.objects.update_or_create(user=request.user, defaults={"language": language})


def forget(request) -> None:
    """The switcher's "automatic": no saved choice, so the browser's language decides again
    (the view deletes the cookie too)."""
    request.session.pop(SESSION_KEY, None)
    if request.user.is_authenticated:
        UserPreference.objects.filter(user=request.user).update(language="")


@receiver(user_logged_in, dispatch_uid="queuewatch-language-at-login")
def _load_preference(sender, request, user, **kwargs):
    if request is None or not hasattr(request, "session"):
        return
    language = UserPreference.objects.filter(user=user).values_list("language", flat=True).first()
    if supported(language):
        request.session[SESSION_KEY] = language
