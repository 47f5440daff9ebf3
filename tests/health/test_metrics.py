"""Prometheus /metrics: parsed with prometheus_client's own text parser, values equal the
monitor's state document and the stored health report, no read of the monitored Redis per
scrape, label escaping, and access control (token, allow-list, login/API token)."""

from __future__ import annotations

import math

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from dashboard.accounts.models import ApiToken
from dashboard.core import dash_redis, state_store
from dashboard.health.checks import run_and_store
from dashboard.health.collector import CONTENT_TYPE, render_metrics
from tests.support.health import make_queue, queue_state, wait_followed
from tests.support.servers import run_node
from tests.support.waiting import wait_for

TOKEN = "prom-secret-token-0123456789"
HOSTILE = 'we"ird\\name\nline'  # a queue name with a quote, a backslash and a newline


def parse(text: str) -> dict:
    """{(sample name, frozenset(labels)): value} plus the types the samples were declared with."""
    samples, types = {}, {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            types[s.name] = family.type
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, key
            samples[key] = s.value
    return {"samples": samples, "types": types}


def labels(q: dict, **extra) -> frozenset:
    return frozenset({"connection": q["connection"], "prefix": q["prefix"], "queue": q["name"], **extra}.items())


def scrape(client, **headers):
    return client.get(reverse("metrics"), **headers)


def bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


# --- exposition ----------------------------------------------------------------------------


def test_render_parses_and_escapes_label_values():
    state = {
        "taken_at": 1_700_000_000_000,
        "monitor": "m",
        "connections": {"default": {"ok": True, "error": None}},
        "queues": [
            {
                "connection": "default",
                "prefix": "{app}",
                "name": HOSTILE,
                "paused": True,
                "counts": {
                    "waiting": 3,
                    "active": 1,
                    "delayed": 0,
                    "prioritized": 0,
                    "waiting-children": 0,
                    "completed": 10,
                    "failed": 2,
                },
                "oldest_waiting_age_ms": 1500,
                "stalled_now": 1,
                "stall_failed_15m": 0,
                "rates_per_min": {"dead_letter": {"1": 0.5, "5": 0.25, "15": 0.1}},
                "events_total": {"completed": 10, "failed": 2, "stalled": 1, "added": 13, "duplicated": 4},
                "stream_gaps": 1,
            }
        ],
    }
    doc = {
        "checked_at": 1_700_000_001_000,
        "connections": [
            {
                "name": "default",
                "results": [
                    {
                        "kind": "queue.paused",
                        "status": "fail",
                        "severity": "warning",
                        "connection": "default",
                        "prefix": "{app}",
                        "queue": HOSTILE,
                    },
                    {
                        "kind": "redis.persistence",
                        "status": "unknown",
                        "severity": "warning",
                        "connection": "default",
                        "prefix": None,
                        "queue": None,
                    },
                ],
            }
        ],
    }
    text = render_metrics(state=state, health=doc, now_ms=1_700_000_002_000)
    assert '\\"' in text and "\\\\" in text and "\\n" in text  # escaped, so the line stays one line
    parsed = parse(text)
    s, q = parsed["samples"], state["queues"][0]
    assert s[("queuewatch_queue_jobs", labels(q, state="waiting"))] == 3
    assert s[("queuewatch_queue_paused", labels(q))] == 1
    assert s[("queuewatch_queue_duplicated_total", labels(q))] == 4
    assert s[("queuewatch_queue_oldest_waiting_age_seconds", labels(q))] == 1.5
    assert s[("queuewatch_monitor_state_age_seconds", frozenset())] == 2.0
    assert s[("queuewatch_health_age_seconds", frozenset())] == 1.0
    failing = frozenset(
        {
            "connection": "default",
            "prefix": "{app}",
            "queue": HOSTILE,
            "kind": "queue.paused",
            "severity": "warning",
        }.items()
    )
    assert s[("queuewatch_check_failing", failing)] == 1
    unknown = frozenset({"connection": "default", "prefix": "", "queue": "", "kind": "redis.persistence"}.items())
    assert s[("queuewatch_check_unknown", unknown)] == 1
    # The parser attaches the counter type to the _total samples themselves (the hand-written
    # text declared the family without _total, so a parser saw the samples untyped).
    assert parsed["types"]["queuewatch_queue_completed_total"] == "counter"
    assert parsed["types"]["queuewatch_queue_stream_gaps_total"] == "counter"
    assert parsed["types"]["queuewatch_queue_jobs"] == "gauge"


def test_nothing_stored_yet_says_so():
    s = parse(render_metrics(state=None, health=None, now_ms=0))["samples"]
    assert s == {("queuewatch_monitor_state_present", frozenset()): 0, ("queuewatch_health_present", frozenset()): 0}


# --- against a real monitor ------------------------------------------------------------------


@pytest.fixture
def hostile_queue(live_setup):
    make_queue(live_setup, HOSTILE)
    return HOSTILE


@pytest.mark.node
@pytest.mark.django_db(transaction=True)
def test_metrics_equal_the_monitors_state_document_and_the_stored_checks(
    followed_queues, hostile_queue, running_monitor, redis_url, client, settings
):
    settings.QUEUEWATCH_METRICS_TOKEN = TOKEN
    url = redis_url
    wait_followed(running_monitor, "calm")  # events before the monitor follows are not totalled
    run_node("produce.mjs", "complete", url, "calm", "3")
    run_node("produce.mjs", "fail", url, "calm", "2")
    run_node("produce.mjs", "add", url, "calm", "4")
    wait_for(
        lambda: (
            (e := queue_state("calm")[0])
            and e["events_total"]["failed"] == 2
            and e["events_total"]["completed"] == 3
            and e["counts"]["waiting"] == 4
        ),
        timeout=20,
    )
    report = run_and_store()
    assert report.state_taken_at is not None

    # The monitor rewrites the state every tick (and the health report on its own schedule):
    # compare a scrape with the documents read just before and after it, when both are the same.
    from dashboard.health.checks import read_stored

    dash = dash_redis.dashboard_redis()
    for _ in range(50):
        before, stored = state_store.read_state(dash), read_stored(dash)
        response = scrape(client, **bearer(TOKEN))
        if state_store.read_state(dash) == before and read_stored(dash) == stored:
            break
    else:
        pytest.fail("the state document changed during every scrape")
    assert response.status_code == 200 and response["Content-Type"] == CONTENT_TYPE
    parsed = parse(response.content.decode())
    s = parsed["samples"]

    assert s[("queuewatch_monitor_state_present", frozenset())] == 1
    assert s[("queuewatch_monitor_state_timestamp_seconds", frozenset())] == before["taken_at"] / 1000
    assert s[("queuewatch_connection_up", frozenset({"connection": "default"}.items()))] == 1
    assert len(before["queues"]) >= 5 and any(q["name"] == HOSTILE for q in before["queues"])
    for q in before["queues"]:
        for state, count in q["counts"].items():
            assert s[("queuewatch_queue_jobs", labels(q, state=state))] == count
        for event, total in q["events_total"].items():
            assert s[(f"queuewatch_queue_{event}_total", labels(q))] == total
        for window, value in q["rates_per_min"]["dead_letter"].items():
            assert math.isclose(
                s[("queuewatch_queue_dead_letter_growth_per_minute", labels(q, window=f"{window}m"))], value
            )
        assert s[("queuewatch_queue_oldest_waiting_age_seconds", labels(q))] == (q["oldest_waiting_age_ms"] or 0) / 1000
        assert s[("queuewatch_queue_stalled_now", labels(q))] == q["stalled_now"]
        assert s[("queuewatch_queue_paused", labels(q))] == int(q["paused"])
        assert s[("queuewatch_queue_stream_gaps_total", labels(q))] == q["stream_gaps"]
    calm = next(q for q in before["queues"] if q["name"] == "calm")
    assert s[("queuewatch_queue_failed_total", labels(calm))] == 2
    assert s[("queuewatch_queue_jobs", labels(calm, state="failed"))] == 2
    assert s[("queuewatch_queue_dead_letter_growth_per_minute", labels(calm, window="1m"))] > 0

    # Check results equal the stored report (ours, or a newer one the monitor stored on its own
    # schedule meanwhile): the waiting jobs have no worker.
    assert stored["checked_at"] >= report.checked_at
    assert s[("queuewatch_health_timestamp_seconds", frozenset())] == stored["checked_at"] / 1000
    for r in (r for c in stored["connections"] for r in c["results"]):
        key = frozenset(
            {
                "connection": r["connection"],
                "prefix": r["prefix"] or "",
                "queue": r["queue"] or "",
                "kind": r["kind"],
                "severity": r["severity"],
            }.items()
        )
        assert s[("queuewatch_check_failing", key)] == (1 if r["status"] == "fail" else 0), r["kind"]
    no_workers = frozenset(
        {
            "connection": "default",
            "prefix": "bull",
            "queue": "calm",
            "kind": "queue.no_workers",
            "severity": "critical",
        }.items()
    )
    assert s[("queuewatch_check_failing", no_workers)] == 1


@pytest.mark.django_db(transaction=True)
def test_a_scrape_never_reads_the_monitored_redis(live_setup, settings, client, monkeypatch):
    settings.QUEUEWATCH_METRICS_TOKEN = TOKEN
    state_store.publish_state(live_setup, {"taken_at": 1, "connections": {}, "queues": []})
    from dashboard.connections.registry import get_registry

    pool = get_registry().source("default")._client.connection_pool  # every command to the monitored Redis
    calls = []
    original = pool.get_connection
    monkeypatch.setattr(pool, "get_connection", lambda *a, **kw: calls.append(a) or original(*a, **kw))
    assert scrape(client, **bearer(TOKEN)).status_code == 200
    assert calls == []
    get_registry().source("default")._client.ping()
    assert len(calls) == 1  # the spy does see commands to the monitored Redis


def test_the_worker_gauge_is_the_monitors_last_reading_and_absent_when_unknown(live_setup):
    """What the monitor writes for ``queuewatch_queue_workers``: the count of its last CLIENT
    LIST, and null (no sample) when that read was refused or the connection is down now."""
    from dashboard.live.rates import build_signals
    from dashboard.monitor.state_document import publish_state
    from dashboard.monitor.tracking import QueueState
    from queues.keys import QueueRef
    from queues.snapshot import COUNT_STATES, QueueSnapshot
    from queues.workers import Worker

    def published(workers, down):
        states = {}
        for name, found in workers.items():
            q = QueueRef("default", "bull", name)
            st = QueueState(workers=found)
            st.signals = build_signals(
                QueueSnapshot(queue=q, counts=dict.fromkeys(COUNT_STATES, 0), paused=False, schedulers=0),
                st.series,
                now_ms=1,
                workers=None if found is None else len(found),
            )
            states[q] = st
        publish_state(live_setup, states=states, connection_names=["default"], down=down, monitor_name="m")
        doc = state_store.read_state(live_setup)
        text = render_metrics(state=doc, health=None, now_ms=doc["taken_at"])
        return (
            {q["name"]: q["workers"] for q in doc["queues"]},
            {
                s.labels["queue"]: s.value
                for f in text_string_to_metric_families(text)
                for s in f.samples
                if s.name == "queuewatch_queue_workers"
            },
        )

    two = [Worker("", "10.0.0.1:1", 5, 0), Worker("b", "10.0.0.1:2", 5, 0)]
    assert published({"mail": two, "idle": [], "refused": None}, {}) == (
        {"mail": 2, "idle": 0, "refused": None},
        {"mail": 2, "idle": 0},
    )
    # The connection went down since the last read: the old count is not passed off as current.
    assert published({"mail": two, "idle": []}, {"default": "connection refused"}) == ({"mail": None, "idle": None}, {})


# --- access control ------------------------------------------------------------------------


@pytest.fixture
def with_state(live_setup, settings):
    settings.QUEUEWATCH_METRICS_TOKEN = None
    settings.QUEUEWATCH_METRICS_ALLOW = []
    state_store.publish_state(live_setup, {"taken_at": 1, "connections": {}, "queues": []})
    return settings


@pytest.mark.django_db
def test_without_configuration_a_login_or_api_token_is_required_and_nobody_is_redirected(with_state, client, user):
    response = scrape(client)
    assert response.status_code == 401 and "Bearer" in response["WWW-Authenticate"]  # not a login redirect
    assert scrape(client, **bearer("qw_wrong")).status_code == 401
    _, token = ApiToken.issue(user)
    assert scrape(client, **bearer(token)).status_code == 200
    client.force_login(user)
    assert scrape(client).status_code == 200


@pytest.mark.django_db
def test_bearer_token(with_state, client, user):
    with_state.QUEUEWATCH_METRICS_TOKEN = TOKEN
    assert scrape(client).status_code == 401
    assert scrape(client, **bearer("wrong")).status_code == 401
    assert scrape(client, **bearer(TOKEN[:-1])).status_code == 401
    assert scrape(client, HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    assert scrape(client, **bearer(TOKEN)).status_code == 200
    client.force_login(user)  # a session is not the metrics token
    assert scrape(client).status_code == 401


@pytest.mark.django_db
def test_ip_allow_list(with_state, client):
    import ipaddress

    with_state.QUEUEWATCH_METRICS_ALLOW = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")]
    assert scrape(client).status_code == 403  # the test client is 127.0.0.1
    assert scrape(client, REMOTE_ADDR="10.1.2.3").status_code == 200
    assert scrape(client, REMOTE_ADDR="::ffff:10.1.2.3").status_code == 200  # IPv4-mapped
    assert scrape(client, REMOTE_ADDR="::1").status_code == 200
    assert scrape(client, REMOTE_ADDR="11.0.0.1").status_code == 403
    # Both configured: both are required.
    with_state.QUEUEWATCH_METRICS_TOKEN = TOKEN
    assert scrape(client, REMOTE_ADDR="10.1.2.3").status_code == 401
    assert scrape(client, REMOTE_ADDR="10.1.2.3", **bearer("wrong")).status_code == 401
    assert scrape(client, REMOTE_ADDR="11.0.0.1", **bearer(TOKEN)).status_code == 403
    assert scrape(client, REMOTE_ADDR="10.1.2.3", **bearer(TOKEN)).status_code == 200


def test_allow_list_setting_is_parsed_and_bad_values_stop_start_up(monkeypatch):
    from dashboard.core.env import env_networks

    monkeypatch.setenv("QUEUEWATCH_METRICS_ALLOW", "10.0.0.0/8, 192.168.1.7 ,::1")
    assert [str(n) for n in env_networks("QUEUEWATCH_METRICS_ALLOW")] == ["10.0.0.0/8", "192.168.1.7/32", "::1/128"]
    monkeypatch.setenv("QUEUEWATCH_METRICS_ALLOW", "10.0.0.0/8,prometheus.local")
    with pytest.raises(ImproperlyConfigured, match="QUEUEWATCH_METRICS_ALLOW"):
        env_networks("QUEUEWATCH_METRICS_ALLOW")


@pytest.mark.django_db
def test_the_allow_list_takes_the_client_through_trusted_proxies_as_the_login_lockout_does(with_state, client):
    import ipaddress

    with_state.QUEUEWATCH_METRICS_ALLOW = [ipaddress.ip_network("10.0.0.0/8")]
    with_state.QUEUEWATCH_TRUSTED_PROXIES = [ipaddress.ip_network("192.168.0.0/16")]
    proxy = {"REMOTE_ADDR": "192.168.1.1"}
    # Behind the proxy, the proxy's address is nobody's: the hop the proxy appended is the client.
    assert scrape(client, HTTP_X_FORWARDED_FOR="10.1.2.3", **proxy).status_code == 200
    assert scrape(client, HTTP_X_FORWARDED_FOR="11.0.0.1", **proxy).status_code == 403
    # A client that writes the header itself does not pass: its own hop is the right-most untrusted one.
    assert scrape(client, HTTP_X_FORWARDED_FOR="10.1.2.3, 11.0.0.1", **proxy).status_code == 403
    # Not through a trusted proxy: the header is ignored.
    assert scrape(client, REMOTE_ADDR="11.0.0.1", HTTP_X_FORWARDED_FOR="10.1.2.3").status_code == 403
    # An allowed network that is also the proxy's: the proxy alone no longer passes.
    with_state.QUEUEWATCH_METRICS_ALLOW = [ipaddress.ip_network("192.168.0.0/16")]
    assert scrape(client, HTTP_X_FORWARDED_FOR="11.0.0.1", **proxy).status_code == 403
