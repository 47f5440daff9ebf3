"""Which language a visitor gets: the browser's Accept-Language by default, the switcher's
choice remembered for the user (on every browser they log in from), and the same rule for the
websocket, which joins the groups of fragments rendered in its page's language."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dashboard.accounts.preferences import UserPreference
from dashboard.core.i18n import SESSION_KEY, language_for_scope
from dashboard.live import channels as live
from dashboard.live import fragments

pytestmark = pytest.mark.django_db


def root(html: str) -> str:
    return html[html.index("<html") : html.index(">", html.index("<html")) + 1]


def test_accept_language_is_the_default(client):
    assert (
        root(client.get("/login/", HTTP_ACCEPT_LANGUAGE="ar,en;q=0.5").content.decode()) == '<html lang="ar" dir="rtl">'
    )
    assert (
        root(client.get("/login/", HTTP_ACCEPT_LANGUAGE="fr,en;q=0.5").content.decode()) == '<html lang="en" dir="ltr">'
    )
    assert "تسجيل الدخول" in client.get("/login/", HTTP_ACCEPT_LANGUAGE="ar").content.decode()


def test_the_switcher_is_on_every_page_and_its_choice_follows_the_user(client, user, scratch_queues):
    client.force_login(user)
    page = client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f'action="{reverse("set_language")}"' in page and '<option value="ar" lang="ar">العربية</option>' in page

    response = client.post(reverse("set_language"), {"language": "ar", "next": "/"}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302 and response["Location"] == "/"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ar"
    assert UserPreference.objects.get(user=user).language == "ar"
    assert (
        root(client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode())
        == '<html lang="ar" dir="rtl">'
    )

    # Another browser, set to English, with no cookie: logging in brings the saved choice.
    other = Client()
    other.post("/login/", {"username": "viewer", "password": "viewer-pass"}, HTTP_ACCEPT_LANGUAGE="en")
    assert (
        root(other.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode()) == '<html lang="ar" dir="rtl">'
    )


def test_the_switcher_works_before_logging_in_and_refuses_unknown_languages(client):
    response = client.post(reverse("set_language"), {"language": "ar", "next": "/login/"})
    assert response.status_code == 302 and response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ar"
    response = client.post(reverse("set_language"), {"language": "xx", "next": "/login/"})
    assert settings.LANGUAGE_COOKIE_NAME not in response.cookies
    assert client.get(reverse("set_language")).status_code == 405


def test_the_javascript_catalog_follows_the_language(client):
    arabic = client.get(reverse("javascript_catalog"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert (
        "\\u062c\\u0627\\u0631\\u064d \\u0625\\u0639\\u0627\\u062f\\u0629" in arabic or "جارٍ إعادة" in arabic
    )  # reconnecting…
    assert "reconnecting" in arabic  # the msgid, mapped to its Arabic text


def test_a_websocket_gets_the_language_of_its_page():
    assert language_for_scope({}) == settings.LANGUAGE_CODE
    assert language_for_scope({"headers": [(b"accept-language", b"ar")]}) == "ar"
    cookie = {settings.LANGUAGE_COOKIE_NAME: "en"}
    assert language_for_scope({"headers": [(b"accept-language", b"ar")], "cookies": cookie}) == "en"
    assert language_for_scope({"session": {SESSION_KEY: "ar"}, "cookies": cookie}) == "ar"  # the user's saved choice
    assert (
        live.language_group("overview", "en") == "overview" and live.language_group("overview", "ar") == "overview.ar"
    )


def test_live_fragments_are_rendered_once_per_language_and_sent_to_each_languages_group():
    element, html = fragments.banner({"default": "connection refused"})
    assert element == live.BANNER_ID and "Connection lost to Redis" in html
    assert "انقطع الاتصال بـ Redis" in html.translations["ar"] and "«default»" in html.translations["ar"]

    sent = []
    publisher = object.__new__(live.Publisher)  # only its fan-out: no loop, no channel layer
    publisher._publish_one = lambda group, element_id, html, force: sent.append((group, str(html))) or True
    publisher.publish(live.ALL, element, html)
    assert sent == [(live.ALL, str(html)), (live.ALL + ".ar", html.translations["ar"])]


def test_the_switcher_names_each_language_in_itself_and_offers_automatic(client, user, scratch_queues):
    client.force_login(user)
    arabic = client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()
    assert '<option value="en" lang="en">English</option>' in arabic  # not «الإنجليزية»
    assert '<option value="ar" lang="ar">العربية</option>' in arabic  # not chosen: the browser's
    assert '<option value="auto" selected>تلقائي (لغة المتصفح)</option>' in arabic
    english = client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<option value="auto" selected>Automatic (browser language)</option>' in english

    client.post(reverse("set_language"), {"language": "ar", "next": "/"})
    chosen = client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert root(chosen) == '<html lang="ar" dir="rtl">' and '<option value="ar" lang="ar" selected>' in chosen

    # Automatic: the saved choice and the cookie are forgotten, the browser's language decides.
    response = client.post(reverse("set_language"), {"language": "auto", "next": "/"})
    assert response.status_code == 302 and response.cookies[settings.LANGUAGE_COOKIE_NAME]["max-age"] == 0
    assert UserPreference.objects.get(user=user).language == ""
    assert SESSION_KEY not in client.session
    again = client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert root(again) == '<html lang="en" dir="ltr">' and '<option value="auto" selected>' in again
    assert root(client.get(reverse("overview"), HTTP_ACCEPT_LANGUAGE="ar").content.decode()) == (
        '<html lang="ar" dir="rtl">'
    )
