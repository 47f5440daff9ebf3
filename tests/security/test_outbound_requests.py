"""Webhook URLs to loopback and link-local addresses were accepted (a viewer read a secret
served by a loopback-only service through the delivery log; also a port-scan oracle).

Now: ``queues.outbound`` denies loopback, link-local (and unspecified, multicast, reserved) unless
``QUEUEWATCH_WEBHOOK_ALLOW`` allows them; the check is made on the resolved address and the
connection goes to that very address; the receiver's error body is shown to admins only. The
test settings allow 127.0.0.1 (the local receivers): tests that check the default clear it."""

from __future__ import annotations

import socket

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.alerts import sender
from dashboard.alerts.models import Channel, Notification
from queues.outbound import OutboundPolicy, OutboundRefused, resolve
from tests.support.receivers import WebhookReceiver

pytestmark = pytest.mark.django_db

DEFAULT = OutboundPolicy.from_entries(allow=[], deny=[])


@pytest.fixture
def receiver():
    r = WebhookReceiver().start()
    yield r
    r.stop()


def client_for(role: str) -> Client:
    user = User.objects.create_user(f"u-{role}", password="pw")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return client


def channel_form(url: str) -> dict:
    return {
        "name": "hook",
        "kind": "webhook",
        "enabled": "on",
        "url": url,
        "shape": "queuewatch",
        "timeout_s": "5",
        "content_type": "application/json",
        "headers": "",
        "to": "",
    }


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "127.8.9.10", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "::ffff:127.0.0.1", "224.0.0.1"],
)
def test_default_policy_denies_loopback_link_local_and_friends(address):
    assert DEFAULT.address_refusal(address)


def test_default_policy_permits_public_and_private_but_deny_private_is_one_word():
    assert DEFAULT.address_refusal("93.184.216.34") is None
    assert DEFAULT.address_refusal("10.1.2.3") is None  # internal receivers are common; documented
    strict = OutboundPolicy.from_entries(allow=[], deny=["private"])
    assert "QUEUEWATCH_WEBHOOK_DENY" in strict.address_refusal("10.1.2.3")


def test_explicit_entries_decide_before_the_builtin_rule():
    policy = OutboundPolicy.from_entries(allow=["127.0.0.1", ".internal.test"], deny=["hooks.bad.test", "8.8.8.0/24"])
    assert policy.address_refusal("127.0.0.1") is None
    assert policy.address_refusal("127.0.0.2")
    assert policy.address_refusal("169.254.1.1", host="a.internal.test") is None
    assert policy.address_refusal("93.184.216.34", host="hooks.bad.test")
    assert policy.address_refusal("8.8.8.8")
    with pytest.raises(ValueError):
        OutboundPolicy.from_entries(allow=["not a host!"], deny=[])


def test_a_hostname_resolving_to_loopback_is_denied():
    with pytest.raises(OutboundRefused, match="loopback"):
        resolve("localhost", 80, policy=DEFAULT)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "http://[::1]:8080/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:9000/hook",
    ],
)
def test_channel_form_rejects_denied_addresses_with_a_clear_message(settings, url):
    settings.QUEUEWATCH_WEBHOOK_ALLOW = []
    response = client_for("admin").post("/alerts/channels/new/", channel_form(url))
    assert response.status_code == 200  # the form again, with the error
    assert Channel.objects.count() == 0
    assert "Webhooks may not be sent to this address" in response.content.decode()


def test_a_stored_loopback_channel_is_not_delivered_by_default(settings, receiver):
    settings.QUEUEWATCH_WEBHOOK_ALLOW = []
    channel = Channel.objects.create(name="old", kind=Channel.WEBHOOK, config={"url": receiver.url, "timeout_s": 5})
    result = sender.send_test(channel=channel, requested_by="admin")
    assert not result.ok and not result.will_retry
    assert "loopback" in result.detail
    assert receiver.received == []  # not even a connection that reached the handler


def test_the_connection_goes_to_the_checked_address_without_a_second_lookup(monkeypatch, receiver):
    """DNS rebinding: a name that answers a permitted address first and loopback later must be
    resolved once, and connected to the address that was checked."""
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "169.254.169.254"])  # the second answer would be refused
    lookups = []

    def rebinding(host, port, *args, **kwargs):
        if host != "rebind.test":
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    channel = Channel.objects.create(
        name="r", kind=Channel.WEBHOOK, config={"url": f"http://rebind.test:{receiver.port}/hook", "timeout_s": 5}
    )
    result = sender.send_test(channel=channel, requested_by="admin")
    assert result.ok, result.detail
    assert lookups == ["rebind.test"] and len(receiver.received) == 1


def test_the_receivers_error_body_is_shown_to_admins_only(receiver):
    channel = Channel.objects.create(name="leaky", kind=Channel.WEBHOOK, config={"url": receiver.url, "timeout_s": 5})
    receiver.answers = [400]  # the receiver's body: "<b>refused</b> with 400" (a secret, in the attack)
    Notification.objects.create(
        channel=channel, idempotency_key="k1", kind=Notification.FIRING, subject="s", payload={"alerts": []}
    )
    sender.send_due()
    for page in ("/alerts/channels/", f"/alerts/channels/{channel.pk}/log/"):
        viewer = client_for("viewer").get(page).content.decode()
        assert "HTTP 400" in viewer and "refused" not in viewer, page
        admin = client_for("admin").get(page).content.decode()
        assert "refused&lt;/b&gt; with 400" in admin, page
        User.objects.all().delete()


@pytest.mark.parametrize(
    "url",
    [
        "http://[fd00:ec2::254]/latest/meta-data/",  # AWS metadata over IPv6 (inside fc00::/7)
        "http://100.100.100.200/latest/meta-data/",  # Alibaba metadata (inside 100.64.0.0/10)
        "http://192.0.0.192/opc/v2/instance/",  # Oracle metadata
        "http://198.18.0.10/hook",  # benchmarking
        "http://192.0.0.8/hook",  # IETF protocol assignments
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",  # Teredo
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",  # NAT64 form of 169.254.169.254
        "http://[64:ff9b:1::1]/hook",  # local-use NAT64
        "http://[100::1]/hook",  # discard-only
        "http://203.0.113.9/hook",  # documentation
        "http://240.0.0.1/hook",  # reserved
    ],
)
def test_channel_form_refuses_cloud_metadata_and_special_purpose_addresses(settings, url):
    """The attack: allow-by-default still reached cloud metadata services that live inside
    otherwise-permitted private ranges, and IANA special-purpose ranges."""
    settings.QUEUEWATCH_WEBHOOK_ALLOW = []
    response = client_for("admin").post("/alerts/channels/new/", channel_form(url))
    assert response.status_code == 200  # the form again, with the error
    assert Channel.objects.count() == 0
    assert "Webhooks may not be sent to this address" in response.content.decode()


@pytest.mark.parametrize("address", ["93.184.216.34", "10.1.2.3", "100.64.1.1", "fd00::1", "2606:4700::1111"])
def test_public_and_private_receivers_stay_permitted_by_default(address):
    assert DEFAULT.address_refusal(address) is None


def test_why_a_connection_failed_is_shown_to_admins_only():
    """The attack: a viewer reads delivery errors to tell closed ports (refused) from filtered
    ones (timed out) and open ones. Viewers now read only "unreachable"."""
    from tests.support.servers import refused_port

    channel = Channel.objects.create(
        name="scan", kind=Channel.WEBHOOK, config={"url": f"http://127.0.0.1:{refused_port()}/", "timeout_s": 2}
    )
    result = sender.send_test(channel=channel, requested_by="admin")
    assert not result.ok
    viewer = client_for("viewer").get("/alerts/channels/").content.decode()
    assert "is unreachable" in viewer and "refused" not in viewer.lower() and "Errno" not in viewer
    admin = client_for("admin").get("/alerts/channels/").content.decode()
    assert "is unreachable" in admin and "refused" in admin.lower()
