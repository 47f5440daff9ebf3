"""Logging in (Django's own view; logging out is ``LogoutView`` in the URL conf). How requests
are authenticated and authorised afterwards: ``dashboard.accounts.auth``."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.views import i18n as django_i18n
from django.views.decorators.http import require_POST

from dashboard import i18n

login = login_not_required(auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True))


@login_not_required  # the login page has the switcher too
@require_POST
def set_language(request):
    """Django's ``set_language`` (cookie, safe redirect back), and the choice saved for the
    logged-in user so it follows them to other browsers."""
    response = django_i18n.set_language(request)
    language = i18n.supported(request.POST.get("language"))
    if language:
        i18n.remember(request, language)
    return response


# The JavaScript strings of static/*.js in the active language (window.gettext & co.).
javascript_catalog = login_not_required(django_i18n.JavaScriptCatalog.as_view(domain="djangojs"))
