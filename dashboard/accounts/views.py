"""Logging in (Django's own view; logging out is ``LogoutView`` in the URL conf), the page a
throttled login gets (django-axes calls ``locked_out``), the API token page, the language
switcher and the JavaScript catalog. How requests are authenticated and
authorised afterwards: ``dashboard.accounts.auth``."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views import i18n as django_i18n
from django.views.decorators.http import require_GET, require_POST

from dashboard.accounts import language as saved_language
from dashboard.accounts import tokens
from dashboard.accounts.auth import ADMIN, audit_refusal, has_role, may_manage_token
from dashboard.accounts.models import ApiToken
from dashboard.core import i18n
from dashboard.web import error_pages

login = login_not_required(
    auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True)
)


@login_not_required  # the login page has the switcher too
@require_POST
def set_language(request):
    """Django's ``set_language`` (cookie, safe redirect back), and the choice saved for the
    logged-in user so it follows them to other browsers."""
    response = django_i18n.set_language(request)
    choice = request.POST.get("language")
    language = i18n.supported(choice)
    if language:
        saved_language.remember(request, language)
    elif choice == i18n.AUTOMATIC:
        saved_language.forget(request)
        response.delete_cookie(
            settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN
        )
    return response


# The JavaScript strings of static/*.js in the active language (window.gettext & co.).
javascript_catalog = login_not_required(django_i18n.JavaScriptCatalog.as_view(domain="djangojs"))


def locked_out(request, original_response=None, credentials=None):
    """429 with a clear message, for the login page and the admin's alike."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(
        request,
        "accounts/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes},
        status=429,
    )


def csrf_failure(request, reason=""):
    """The friendly CSRF failure page (dashboard/web/error_pages.py), after recording the refusal in
    the audit log."""
    audit_refusal(request.user, kind="csrf", via="page", target=f"{request.method} {request.path}", message=reason)
    return error_pages.csrf_failure(request, reason)


@require_GET
def token_list(request):
    """Your API tokens (an admin sees everyone's), with a button to revoke each."""
    rows = ApiToken.objects.select_related("user").order_by("-created_at")
    if not has_role(request.user, ADMIN):
        rows = rows.filter(user=request.user)
    return render(request, "accounts/tokens.html", {"tokens": rows[:500], "all_users": has_role(request.user, ADMIN)})


@require_POST
def token_revoke(request, token_id: int):
    row = get_object_or_404(ApiToken.objects.select_related("user"), pk=token_id)
    if not may_manage_token(request.user, row):
        why = _("You may revoke only your own tokens.")
        audit_refusal(
            request.user, kind="role", via="page", target=f"token {row.pk} {row.hint}… of {row.user}", message=why
        )
        raise PermissionDenied(why)
    if tokens.revoke(row, by=request.user, via="page"):
        messages.success(request, _("Token %(hint)s… revoked.") % {"hint": row.hint})
    return redirect("tokens")
