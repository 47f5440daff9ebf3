"""No login rate limit. 40 wrong passwords, then the right one, were accepted, on the
login page and on the admin's. Now django-axes counts failures per user name and per address."""

from __future__ import annotations

import ipaddress

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

LOCKED = "Too many failed logins"


def attempt(client: Client, url: str, username: str, password: str):
    return client.post(url, {"username": username, "password": password, "next": "/"}, REMOTE_ADDR=client.address)


def client_from(address: str) -> Client:
    client = Client()
    client.address = address
    return client


@pytest.mark.parametrize("url", ["/login/", "/admin/login/"])
def test_forty_wrong_passwords_then_the_right_one_is_refused(url):
    User.objects.create_user("alice", password="right-pass", is_staff=True, is_superuser=True)
    attacker = client_from("203.0.113.7")
    for _ in range(40):
        attempt(attacker, url, "alice", "wrong")
    response = attempt(attacker, url, "alice", "right-pass")
    assert response.status_code == 429
    assert LOCKED in response.content.decode() and "15 minutes" in response.content.decode()
    assert "_auth_user_id" not in attacker.session
    # Per user: alice is locked from any address, for now.
    elsewhere = client_from("198.51.100.1")
    assert attempt(elsewhere, url, "alice", "right-pass").status_code == 429


def test_one_address_trying_many_users_is_locked_for_all_of_them(settings):
    User.objects.create_user("bob", password="bob-pass")
    sprayer = client_from("203.0.113.9")
    for n in range(settings.AXES_FAILURE_LIMIT):
        attempt(sprayer, "/login/", f"user{n}", "guess")
    assert attempt(sprayer, "/login/", "bob", "bob-pass").status_code == 429
    # bob himself, from his own address, is not affected.
    own = client_from("198.51.100.2")
    assert attempt(own, "/login/", "bob", "bob-pass").status_code == 302


def test_a_few_mistakes_do_not_lock_and_the_limit_is_configurable(settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_user("carol", password="carol-pass")
    user = client_from("198.51.100.3")
    for _ in range(2):
        assert attempt(user, "/login/", "carol", "typo").status_code == 200
    assert attempt(user, "/login/", "carol", "carol-pass").status_code == 302


PROXY = "10.0.0.5"  # every request connects from the reverse proxy


def through_proxy(forwarded_for: str, username: str, password: str):
    return Client().post(
        "/login/",
        {"username": username, "password": password, "next": "/"},
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR=forwarded_for,
    )


def test_behind_an_untrusted_proxy_x_forwarded_for_is_ignored(settings):
    """Without QUEUEWATCH_TRUSTED_PROXIES the header is the client's word: counted per connecting
    address (one attacker rotating the header stays one address)."""
    settings.QUEUEWATCH_TRUSTED_PROXIES = []
    User.objects.create_user("carol", password="carol-pass")
    for n in range(settings.AXES_FAILURE_LIMIT):
        through_proxy(f"203.0.113.{n}", f"user{n}", "guess")
    assert through_proxy("198.51.100.20", "carol", "carol-pass").status_code == 429


def test_behind_a_trusted_proxy_one_clients_failures_lock_only_that_client(settings):
    """The attack: one client behind the proxy fails logins until the limit. Everyone behind the
    proxy shared its address and was locked out. With the proxy trusted, the client address is the
    right-most X-Forwarded-For hop not a trusted proxy; what the client writes left of it (a forged
    chain) changes nothing."""
    settings.QUEUEWATCH_TRUSTED_PROXIES = [ipaddress.ip_network("10.0.0.0/8")]
    User.objects.create_user("dave", password="dave-pass")
    for n in range(settings.AXES_FAILURE_LIMIT):
        # The client forges a new left-hand address each time; the proxies append the real one.
        through_proxy(f"192.0.2.{n}, 203.0.113.7, 10.1.1.1", f"user{n}", "guess")
    assert through_proxy("203.0.113.7", "dave", "dave-pass").status_code == 429  # that client is locked
    assert through_proxy("198.51.100.30, 10.1.1.1", "dave", "dave-pass").status_code == 302  # the others are not
