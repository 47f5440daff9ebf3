"""Production defaults are secure (HSTS, SSL redirect, secure cookies, 12 h sessions,
a CSP without 'unsafe-inline'), `check --deploy` is clean with production settings, each
relaxation is its own setting, and no template needs inline script or style."""

from __future__ import annotations

import re

import pytest

from tests.support.django_process import run_django, settings_of
from tests.support.servers import ROOT


def test_check_deploy_is_clean_with_production_settings():
    done = run_django({}, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_production_defaults_are_https_only_and_sessions_short():
    names = (
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SESSION_COOKIE_AGE",
        "SECURE_PROXY_SSL_HEADER",
    )
    assert settings_of({}, *names) == ["True", "True", "True", str(365 * 24 * 3600), str(12 * 3600), "None"]
    # Each relaxation is its own setting; the proxy header is trusted only when asked to.
    relaxed = settings_of(
        {
            "QUEUEWATCH_SECURE_COOKIES": "0",
            "QUEUEWATCH_SSL_REDIRECT": "0",
            "QUEUEWATCH_HSTS_SECONDS": "0",
            "QUEUEWATCH_SESSION_HOURS": "2",
            "QUEUEWATCH_TRUST_X_FORWARDED_PROTO": "1",
        },
        *names,
    )
    assert relaxed == ["False", "False", "False", "0", str(2 * 3600), "('HTTP_X_FORWARDED_PROTO', 'https')"]
    assert settings_of({"QUEUEWATCH_SSL_REDIRECT": "0"}, "SESSION_COOKIE_SECURE") == ["True"]


def test_the_dev_script_sets_each_plain_http_relaxation_explicitly():
    script = (ROOT / "dev").read_text()
    for name in ("QUEUEWATCH_SECURE_COOKIES=0", "QUEUEWATCH_SSL_REDIRECT=0", "QUEUEWATCH_HSTS_SECONDS=0"):
        assert name in script


def test_every_documented_setting_is_in_the_configuration_table():
    table = (ROOT / "docs" / "operations.md").read_text()
    for name in (
        "QUEUEWATCH_SECURE_COOKIES",
        "QUEUEWATCH_SSL_REDIRECT",
        "QUEUEWATCH_HSTS_SECONDS",
        "QUEUEWATCH_HSTS_INCLUDE_SUBDOMAINS",
        "QUEUEWATCH_HSTS_PRELOAD",
        "QUEUEWATCH_TRUST_X_FORWARDED_PROTO",
        "QUEUEWATCH_SESSION_HOURS",
        "QUEUEWATCH_INSECURE_DEV",
        "QUEUEWATCH_EXPORTS_PER_USER",
    ):
        assert re.search(rf"^\|\s*`{name}`", table, re.M), name
    assert "## Upgrading" in table


INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|javascript:|hx-on", re.I)


def test_no_page_template_has_inline_script_style_or_handler():
    """What the CSP (no 'unsafe-inline') would block. Email bodies are not pages."""
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        if "email" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if INLINE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


@pytest.mark.django_db
def test_every_answer_carries_the_policy_without_unsafe_inline(client):
    response = client.get("/login/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
