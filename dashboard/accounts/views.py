"""Logging in (Django's own view; logging out is ``LogoutView`` in the URL conf), and the page a
throttled login gets (django-axes calls ``locked_out``). How requests are authenticated and
authorised afterwards: ``dashboard.accounts.auth``."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.shortcuts import render

login = login_not_required(auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True))


def locked_out(request, original_response=None, credentials=None):
    """429 with a clear message, for the login page and the admin's alike."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(request, "accounts/locked_out.html",
                  {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}, status=429)
