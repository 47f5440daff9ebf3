"""``redact_url`` is total: for any string it returns, never raises, and never gives back a
password, whatever form the URL (or non-URL) takes."""

from __future__ import annotations

import random

import pytest

from queues.connections import ConnectionSpec, redact_url
from queues.sources.spec import hide_url_secrets


@pytest.mark.parametrize(
    "url, shown",
    [
        ("redis://user:pw@host:1/2", "redis://user:***@host:1/2"),
        ("redis://:pw@host", "redis://:***@host"),  # password only
        ("redis://host:6379", "redis://host:6379"),
        ("redis://user@host/0", "redis://user@host/0"),  # user only: nothing to hide
        ("redis://u:@host", "redis://u:@host"),  # an empty password
        ("redis+cluster://u:p4ss@h1:1,h2:2", "redis+cluster://u:***@h1:1,h2:2"),  # multi-host
        ("postgres://u:p4ss@h1,h2/db", "postgres://u:***@h1,h2/db"),
        ("redis://u:p4ss@[::1]:6379/0", "redis://u:***@[::1]:6379/0"),  # IPv6
        ("redis://u:p4ss@[::1/0", "redis://u:***@[::1/0"),  # a malformed IPv6 host urlsplit rejects
        ("rediss://u:p%40ss%2Fw0rd@h/0", "rediss://u:***@h/0"),  # percent-encoded
        ("redis://:p@ss@h/0", "redis://:***@h/0"),  # a raw '@' in the password
        ("redis://u:pa/ss?x#y@h/0", "redis://u:***@h/0"),  # raw '/', '?', '#' in the password
        ("redis://h/0?password=p4ss&db=1", "redis://h/0?password=***&db=1"),
        ("redis://h/0?sentinel_password=p4ss", "redis://h/0?sentinel_password=***"),
        ("redis://h/0?pass=p4ss&passage=1&author=me", "redis://h/0?pass=***&passage=1&author=me"),
        ("redis://h/0?Pass%77ord=p4ss", "redis://h/0?Pass%77ord=***"),  # an encoded parameter name
        ("unix:///run/redis.sock?password=p4ss&db=2", "unix:///run/redis.sock?password=***&db=2"),
        ("redis://h/0#token=p4ss", "redis://h/0#token=***"),
        ("user:p4ss@host:6379", "user:***@host:6379"),  # no scheme
        (":p4ss@host", ":***@host"),
        ("garbage", "garbage"),
        ("", ""),
        ("://", "://"),
        ("@", "@"),
        (":@", ":@"),
        ("redis://", "redis://"),
    ],
)
def test_redacted_forms(url, shown):
    assert redact_url(url) == shown


NASTY = "abcXYZ019:/@?#[]%&;=,.+-_~!$'()* \t\n\u00e9\u0660\ufffd"


def test_any_string_comes_back_without_raising():
    rng = random.Random(20240613)
    for _ in range(3000):
        text = "".join(rng.choice(NASTY) for _ in range(rng.randrange(0, 40)))
        assert isinstance(redact_url(text), str)


@pytest.mark.parametrize("scheme", ["redis://", "rediss://", "redis+cluster://", "postgres://", "unix://", ""])
def test_a_password_made_of_anything_is_never_shown(scheme):
    """Passwords of any characters, raw or not (a URL with a raw '/' or '@' in its password is
    wrong, but a mistake must not put the password on a page), in any kind of URL."""
    rng = random.Random(scheme)
    hosts = ["h", "h:6379", "[::1]:6379", "h1:1,h2:2", "h1,h2", "[fe80::1%25eth0]", ""]
    tails = ["", "/0", "/db?ssl_cert_reqs=none", "?db=2#frag", "/0?password=SECRETq"]
    for _ in range(500):
        password = "SECRET" + "".join(rng.choice(NASTY) for _ in range(rng.randrange(0, 12)))
        user = rng.choice(["", "app", "default"])
        url = f"{scheme}{user}:{password}@{rng.choice(hosts)}{rng.choice(tails)}"
        assert "SECRET" not in redact_url(url), url
        assert "SECRET" not in ConnectionSpec("x", url).display_url, url


def test_a_message_quoting_the_url_loses_the_password_in_either_encoding():
    url = "redis://u:p%40ssw0rd@h/0"
    assert hide_url_secrets("bad p%40ssw0rd, i.e. p@ssw0rd, in redis://u:p%40ssw0rd@h/0", url) == (
        "bad ***, i.e. ***, in redis://u:***@h/0"
    )
    assert hide_url_secrets("nothing to hide", "redis://h/0") == "nothing to hide"
