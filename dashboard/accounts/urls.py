"""Signing in and out, the language switcher and API tokens."""

from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard.accounts import views

urlpatterns = [
    path("login/", views.login, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("language/", views.set_language, name="set_language"),
    path("jsi18n/", views.javascript_catalog, name="javascript_catalog"),
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:token_id>/revoke", views.token_revoke, name="token_revoke"),
]
