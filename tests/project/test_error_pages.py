"""The pages a request ends on when it goes wrong (dashboard/web/error_pages.py, wired as Django's
handler400/403/404/500 and CSRF_FAILURE_VIEW): each is the shell with the status, a sentence
saying what happened and a way back, in the visitor's language, and never Django's bare page."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client, RequestFactory
from django.urls import get_resolver, reverse
from django.utils import translation

from dashboard.accounts.models import ApiToken
from dashboard.audit.models import AuditEntry

pytestmark = pytest.mark.django_db

TITLES = {
    "en": {
        400: "Bad request",
        403: "Not allowed",
        404: "Page not found",
        500: "Something went wrong",
        "csrf": "This form has expired",
    },
    "ar": {
        400: "طلب غير صالح",
        403: "غير مسموح",
        404: "الصفحة غير موجودة",
        500: "حدث خطأ",
        "csrf": "انتهت صلاحية هذا النموذج",
    },
}
BACK = {"en": "Back to all queues", "ar": "العودة إلى كل الطوابير"}


def signed_in(*, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(User.objects.create_user(f"someone-{User.objects.count()}", password="pw"))
    return client


def assert_friendly(response, status: int, lang: str, title: str) -> str:
    html = unescape(response.content.decode())
    assert response.status_code == status
    assert f'<html lang="{lang}" dir="{"rtl" if lang == "ar" else "ltr"}">' in html
    assert 'class="topbar"' in html and 'class="error-page"' in html  # the shell, not a bare page
    assert f"<h1>{title}</h1>" in html
    return html


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_an_unknown_address_is_a_friendly_404_with_a_way_back(lang):
    html = assert_friendly(signed_in().get("/no/such/page/", HTTP_ACCEPT_LANGUAGE=lang), 404, lang, TITLES[lang][404])
    assert f'href="{reverse("overview")}">{BACK[lang]}</a>' in html
    assert "Using the URLconf" not in html and "api/v1/" not in html  # nothing of the URL conf leaks


def test_signed_out_the_404_offers_the_login():
    html = assert_friendly(Client().get("/no/such/page/"), 404, "en", TITLES["en"][404])
    assert f'href="{reverse("login")}">Log in</a>' in html and "Log out" not in html


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_refusal_is_a_friendly_403_saying_why(lang):
    owner = User.objects.create_user("owner", password="pw")
    token, _ = ApiToken.issue(owner, scopes=["read"])
    client = signed_in()
    response = client.post(reverse("token_revoke", args=[token.pk]), HTTP_ACCEPT_LANGUAGE=lang)
    html = assert_friendly(response, 403, lang, TITLES[lang][403])
    with translation.override(lang):
        assert translation.gettext("You may revoke only your own tokens.") in html  # the reason, not a generic line


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_malformed_request_is_a_friendly_400(lang):
    too_many_fields = {f"f{i}": "x" for i in range(1200)}  # over DATA_UPLOAD_MAX_NUMBER_FIELDS: SuspiciousOperation
    response = Client().post(reverse("login"), too_many_fields, HTTP_ACCEPT_LANGUAGE=lang)
    assert_friendly(response, 400, lang, TITLES[lang][400])


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_forged_form_is_a_friendly_csrf_page_and_is_audited(lang):
    client = signed_in(csrf=True)
    response = client.post(reverse("set_language"), {"language": lang}, HTTP_ACCEPT_LANGUAGE=lang)
    assert_friendly(response, 403, lang, TITLES[lang]["csrf"])
    assert AuditEntry.objects.filter(action="refused.csrf").count() == 1


@pytest.mark.parametrize("lang", ["en", "ar"])
def test_a_crash_is_a_friendly_500(lang):
    # Django calls the handler itself once a view raised; call the wired handler the same way.
    handler = get_resolver().resolve_error_handler(500)
    request = RequestFactory().get("/", HTTP_ACCEPT_LANGUAGE=lang)
    request.user, request.session = AnonymousUser(), SessionStore()
    with translation.override(lang):
        response = handler(request)
    assert_friendly(response, 500, lang, TITLES[lang][500])


def test_a_500_still_answers_when_the_shell_cannot_render(monkeypatch):
    import dashboard.web.error_pages as error_pages

    def broken(*args, **kwargs):
        raise RuntimeError("database gone")

    monkeypatch.setattr(error_pages, "render", broken)
    with translation.override("en"):
        response = get_resolver().resolve_error_handler(500)(RequestFactory().get("/"))
    assert response.status_code == 500 and "Try again in a moment" in response.content.decode()
