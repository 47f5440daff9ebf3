"""Live fragments are rendered in another language only while someone views them in it:
rendering is most of the monitor's CPU, and a language nobody views must not double it."""

from __future__ import annotations

import pytest

from dashboard.core import dash_redis
from dashboard.live import fragments

pytestmark = pytest.mark.django_db


@pytest.fixture
def restore_rendering():
    yield
    fragments.only_render(None)


def test_only_viewed_languages_are_rendered(restore_rendering):
    fragments.only_render(set())
    assert fragments.render_localized("base.html#live-banner", {"down": {}}).translations == {}
    fragments.only_render({"ar"})
    assert set(fragments.render_localized("base.html#live-banner", {"down": {}}).translations) == {"ar"}
    fragments.only_render(None)  # a process that never narrows it renders every language
    assert set(fragments.render_localized("base.html#live-banner", {"down": {}}).translations) == {"ar"}


def test_a_viewer_announces_its_language_and_the_monitor_follows(live_setup, restore_rendering):
    from dashboard.monitor.loop import Monitor

    dash = dash_redis.dashboard_redis()
    monitor = Monitor(tick=0.5, name="test-monitor")
    monitor.follow_viewed_languages()
    assert monitor.rendered_languages == set()
    dash_redis.announce_language(dash, "ar")
    assert dash_redis.viewed_languages(dash) == {"ar"}
    monitor.follow_viewed_languages()
    assert monitor.rendered_languages == {"ar"}
    assert set(fragments.render_localized("base.html#live-banner", {"down": {}}).translations) == {"ar"}
