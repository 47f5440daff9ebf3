"""Helpers for the end-to-end tests: the running app as the browser sees it, and logging in."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LiveApp:
    url: str
    username: str
    password: str
    env: dict


def log_in(page, app: LiveApp) -> None:
    page.goto(app.url + "/")
    assert "/login/" in page.url
    page.fill("input[name=username]", app.username)
    page.fill("input[name=password]", app.password)
    page.click("button[type=submit]")
    page.wait_for_url(app.url + "/")
