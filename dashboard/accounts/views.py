"""Logging in (Django's own view; logging out is ``LogoutView`` in the URL conf). How requests
are authenticated and authorised afterwards: ``dashboard.accounts.auth``."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required

login = login_not_required(auth_views.LoginView.as_view(template_name="accounts/login.html", redirect_authenticated_user=True))
