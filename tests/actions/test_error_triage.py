"""Error triage: built-in classes on real error messages (as Node libraries,
databases and BullMQ word them), admins' rules, hostile patterns, the retry outlook from the
failed set's times, and the page's guard against a blind retry of a permanent group."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from dashboard.actions.models import TriageRule
from queues.error_groups import fingerprint
from queues.error_triage import (
    MAX_INPUT,
    PERMANENT,
    TRANSIENT,
    UNKNOWN,
    UserRule,
    classify,
    retry_outlook,
    validate_pattern,
)
from queues.keys import QueueRef
from queues.redis.error_groups import error_groups
from tests.support.seeding import seed_failed
from tests.support.servers import run_node

# Messages as they reach job.failedReason (err.message of the thrown error).
TRANSIENT_MESSAGES = [
    "connect ECONNREFUSED 127.0.0.1:5432",  # node net / pg
    "read ECONNRESET",  # node net
    "socket hang up",  # node http
    "Request failed with status code 429",  # axios
    "Request failed with status code 503",  # axios
    "HTTP 502 Bad Gateway",
    "timeout of 5000ms exceeded",  # axios
    "Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call?",
    "Connection terminated due to connection timeout",  # pg
    "deadlock detected",  # postgres
    "ER_LOCK_WAIT_TIMEOUT: Lock wait timeout exceeded; try restarting transaction",  # mysql
    "SQLITE_BUSY: database is locked",
    "Missing lock for job 42. moveToFinished",  # BullMQ
    "Too Many Requests",
    "getaddrinfo EAI_AGAIN api.example.com",
]
PERMANENT_MESSAGES = [
    "UnrecoverableError: card was declined",  # BullMQ's own "do not retry"
    '"email" must be a valid email',  # joi
    "ValidationError: name: Path `name` is required.",  # mongoose
    "Request failed with status code 404",  # axios
    "Request failed with status code 422",
    "HTTP 401 Unauthorized",
    "User 8f0c2a8e-1b2c-4d3e-9f00-0123456789ab not found",
    'relation "invoices" does not exist',  # postgres
    "Cannot read properties of undefined (reading 'id')",  # V8 TypeError message
    "ENOENT: no such file or directory, open '/data/in.csv'",
]
UNKNOWN_MESSAGES = ["boom", "card declined for order 7", "Something went wrong"]


@pytest.mark.parametrize("message", TRANSIENT_MESSAGES)
def test_transient_messages(message):
    assert classify(message).error_class == TRANSIENT, classify(message)


@pytest.mark.parametrize("message", PERMANENT_MESSAGES)
def test_permanent_messages(message):
    assert classify(message).error_class == PERMANENT, classify(message)


@pytest.mark.parametrize("message", UNKNOWN_MESSAGES)
def test_unknown_messages(message):
    assert classify(message).error_class == UNKNOWN and classify(message).matched_by == ""


def test_only_the_first_line_is_classified():
    assert classify("card declined\n    at charge (/app/timeout.js:3:9)").error_class == UNKNOWN


def test_user_rules_come_first_in_order_and_override_built_ins():
    rules = [UserRule(r"cdn .* status code 404", TRANSIENT, "flaky CDN"), UserRule(r"declined", PERMANENT)]
    assert classify("cdn fetch: Request failed with status code 404", user_rules=rules).matched_by == "rule: flaky CDN"
    assert classify("cdn fetch: Request failed with status code 404", user_rules=rules).error_class == TRANSIENT
    assert classify("card declined for order 7", user_rules=rules).error_class == PERMANENT
    assert classify("Request failed with status code 404", user_rules=rules).matched_by == "built-in: HTTP 4xx"


@pytest.mark.parametrize(
    "pattern,message",
    [
        ("", "Enter a regular expression"),
        ("a" * 301, "at most 300 characters"),
        ("(unclosed", "not a valid regular expression"),
        ("(x+x+)+y", "takes too long"),
        ("(a|aa)+$", "takes too long"),
    ],
)
def test_bad_patterns_are_refused_with_a_clear_message(pattern, message):
    assert message in (validate_pattern(pattern) or "")


def test_a_hostile_rule_that_slipped_in_cannot_hang_classification():
    hostile = [UserRule("(x+x+)+y", PERMANENT), UserRule("(a|aa)+$", PERMANENT)]
    started = time.monotonic()
    got = classify("x" * 50_000 + " timeout", user_rules=hostile)  # cut to MAX_INPUT, each match times out
    assert time.monotonic() - started < 1.0
    assert got.error_class == UNKNOWN  # the timeout word lies beyond MAX_INPUT: bounded input
    assert classify("a" * (MAX_INPUT - 10) + " timeout", user_rules=hostile).error_class == TRANSIENT
    assert validate_pattern(r"payment gateway .* declined") is None


def test_retry_outlook_compares_the_last_5_minutes_with_the_15_before(redis_client):
    q = QueueRef("default", "bull", "triage")
    now = 10_000_000_000
    # 30 failures spread over 15..20 minutes ago, then 2 in the last 5 minutes: subsiding.
    seed_failed(redis_client, q, 30, start_ms=now - 19 * 60_000, reason=lambda i: "read ECONNRESET")
    (group,) = error_groups(redis_client, queue=q, now_ms=now)
    assert (group.last_5m, group.prior_15m, group.sample_reason) == (0, 30, "read ECONNRESET")
    outlook = retry_outlook(last_5m=2, prior_15m=30)
    assert outlook.likely_to_help and not retry_outlook(last_5m=5, prior_15m=30).likely_to_help  # 1/min = half of 2/min
    later = error_groups(redis_client, queue=q, now_ms=now - 19 * 60_000 + 2 * 60_000)  # 30 in its last 5 min
    assert (later[0].last_5m, later[0].prior_15m) == (30, 0)
    assert not retry_outlook(last_5m=30, prior_15m=0).likely_to_help


def test_an_admin_rule_is_validated_in_the_django_admin(admin_client):
    url = reverse("admin:dashboard_triagerule_add")
    r = admin_client.post(url, {"pattern": "(x+x+)+y", "error_class": "permanent", "position": 0})
    assert r.status_code == 200 and "takes too long" in r.content.decode()
    assert not TriageRule.objects.exists()
    r = admin_client.post(url, {"pattern": "payment gateway .* declined", "error_class": "permanent", "position": 0})
    assert r.status_code == 302 and TriageRule.objects.get().as_rule().error_class == PERMANENT


# --- the page, on jobs failed by real BullMQ workers ------------------------------------------

Q = ("default", "bull", "triage")


@pytest.fixture
def operator_client(client):
    user = User.objects.create_user("op", password="pw")
    user.groups.add(Group.objects.get_or_create(name="operator")[0])
    client.force_login(user)
    return client


@pytest.mark.node
@pytest.mark.django_db
def test_groups_show_their_class_and_a_permanent_retry_needs_the_confirmation(operator_client, actions_redis):
    run_node("seed_actions.mjs", actions_redis, "triage", "3", "0", "0", "sync", "ValidationError: email is invalid")
    run_node("seed_actions.mjs", actions_redis, "triage", "2", "0", "0", "sync", "connect ECONNREFUSED 10.0.0.7:5432")
    run_node("seed_actions.mjs", actions_redis, "triage", "2", "0", "0", "sync", "payment gateway declined")
    TriageRule.objects.create(
        pattern="payment gateway .*declined", error_class="permanent", comment="card issuer said no"
    )
    html = operator_client.get(reverse("queue_errors", args=Q)).content.decode()
    permanent = fingerprint("ValidationError: email is invalid 0")
    assert f'data-fingerprint="{permanent}" data-error-class="permanent"' in html
    assert (
        f'data-fingerprint="{fingerprint("connect ECONNREFUSED 10.0.0.7:5432 0")}" data-error-class="transient"' in html
    )
    assert 'data-error-class="permanent"' in html and "(rule: card issuer said no)" in html
    assert "Retrying is likely to help now" not in html and "Not yet: still" in html  # all failed just now
    assert html.count('name="confirm_class"') == 2  # the two permanent groups only

    preview = reverse("bulk_preview", args=Q)
    form = {
        "action": "retry",
        "state": "failed",
        "fingerprint": permanent,
        "scope": "matching",
        "triage_class": "permanent",
    }
    refused = operator_client.post(preview, form, HTTP_HX_REQUEST="true").content.decode()
    assert "classed permanent" in refused and "bulk-preview" not in refused
    shown = operator_client.post(
        preview, {**form, "confirm_class": "permanent"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "bulk-preview" in shown and 'data-count="3"' in shown
    discard = operator_client.post(preview, {**form, "action": "discard"}, HTTP_HX_REQUEST="true").content.decode()
    assert "bulk-preview" in discard  # discarding a permanent group needs no confirmation
