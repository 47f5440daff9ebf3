"""The outbox's sender: claims due notifications, delivers them, retries, logs every attempt.

Called by the monitor's scheduler (``send_due``) and by the "send test" button (``send_test``).

* **Claiming is a compare-and-swap.** A row is taken by an UPDATE that only matches the state
  and attempt count the sender read (``filter(id=…, state=…, attempts=…).update(…)``); the
  attempt count goes up with every claim, so it doubles as the claim token. Two senders (two
  monitors around a failover) can read the same due rows, but only one UPDATE matches, and
  the other sender skips the row. A claim is a lease (``CLAIM_LEASE``): a sender that died
  mid-delivery leaves a row in ``sending`` that becomes due again when the lease runs out, and
  its late result, if it ever comes, no longer matches and is dropped.
* **At least once.** A receiver can get a notification twice only when an answer was lost
  (timeout, dropped connection) or a lease ran out; both sends carry the same
  ``Idempotency-Key`` (and the same body), so the receiver can drop the second.
* **Retries** back off exponentially from ``RETRY_BASE`` with jitter, capped at ``RETRY_CAP``,
  honouring a receiver's ``Retry-After`` up to the cap, and give up after ``GIVE_UP_AFTER``.
  A permanent error (a 4xx other than 408/425/429, a refused address) fails the row at once.
  Every failure is written to the channel as its last error.
* **A receiver that is down costs one attempt per backoff step, not one per notification:**
  after a retryable failure, the channel's other due rows wait for the same moment, in order.
  When the receiver is back, everything it missed goes out, oldest first.
"""

from __future__ import annotations

import datetime
import logging
import random
import time
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from dashboard.alerts.models import Channel, DeliveryAttempt, Notification
from dashboard.alerts.notifiers import DeliveryError, notifier_for
from dashboard.alerts.notifiers.base import absolute_url
from dashboard.core.db import db_retry

logger = logging.getLogger(__name__)

RETRY_BASE = datetime.timedelta(seconds=10)
RETRY_CAP = datetime.timedelta(minutes=5)
GIVE_UP_AFTER = datetime.timedelta(hours=24)
# Longer than the slowest delivery (webhook timeout at most 30 s, SMTP timeout), so a live
# sender never loses its claim mid-send.
CLAIM_LEASE = datetime.timedelta(minutes=2)


def retry_delay(
    *, attempts: int, retry_after: float | None = None, rng: random.Random | None = None
) -> datetime.timedelta:
    """How long to wait after the ``attempts``-th failed attempt: ``RETRY_BASE · 2^(attempts-1)``,
    capped at ``RETRY_CAP``, times a random factor in [0.5, 1] so that many notifications
    failing together do not retry in lockstep; never less than the receiver's ``Retry-After``
    (itself capped)."""
    doublings = min(max(attempts - 1, 0), 30)  # far past the cap already; avoids float overflow
    ceiling = min(RETRY_BASE.total_seconds() * 2**doublings, RETRY_CAP.total_seconds())
    seconds = ceiling * (rng or random).uniform(0.5, 1.0)
    if retry_after is not None:
        seconds = max(seconds, min(retry_after, RETRY_CAP.total_seconds()))
    return datetime.timedelta(seconds=seconds)


def _due(now: datetime.datetime) -> Q:
    # Pending and due, or claimed by a sender whose lease ran out (it died or hung).
    return Q(state=Notification.PENDING, next_attempt_at__lte=now) | Q(
        state=Notification.SENDING, claimed_until__lt=now
    )


@dataclass(frozen=True)
class Candidate:
    """A due row as one sender saw it: the state and attempt count its claim must still match."""

    id: int
    channel_id: int
    state: str
    attempts: int


def due_candidates(*, now: datetime.datetime, limit: int, key_prefix: str = "") -> list[Candidate]:
    rows = (
        Notification.objects.filter(_due(now), idempotency_key__startswith=key_prefix)
        .order_by("next_attempt_at", "id")
        .values_list("id", "channel_id", "state", "attempts")[:limit]
    )
    return [Candidate(*row) for row in rows]


def _claim(candidate: Candidate, *, now: datetime.datetime) -> Notification | None:
    """Take the row if nobody else has since the candidate was read; None if someone has."""
    rows = Notification.objects.filter(_due(now), id=candidate.id, state=candidate.state, attempts=candidate.attempts)
    won = rows.update(state=Notification.SENDING, attempts=F("attempts") + 1, claimed_until=now + CLAIM_LEASE)
    # None too if the row was deleted (with its channel) between the claim and this read.
    return Notification.objects.select_related("channel").filter(id=candidate.id).first() if won else None


def _deliver(notification: Notification) -> tuple[str | None, DeliveryError | None]:
    channel = notification.channel
    if not channel.enabled and notification.kind != Notification.TEST:
        return None, DeliveryError("The channel is disabled.", retry=False)
    try:
        return notifier_for(channel).send(notification), None
    except DeliveryError as exc:
        return None, exc
    except Exception as exc:  # a bug, not the receiver: keep the row and say so
        logger.exception("notifier for channel %s failed unexpectedly", channel.pk)
        return None, DeliveryError(f"Internal error while sending: {type(exc).__name__}: {exc}", retry=True)


def attempt(candidate: Candidate, *, now: datetime.datetime) -> DeliveryAttempt | None:
    """Claim, deliver and record one notification. None when another sender had claimed it."""
    notification = _claim(candidate, now=now)
    return None if notification is None else _deliver_claimed(notification, now=now)


def _deliver_claimed(notification: Notification, *, now: datetime.datetime) -> DeliveryAttempt:
    started = time.monotonic()
    detail, error = _deliver(notification)
    duration_ms = int((time.monotonic() - started) * 1000)

    # The delivery has happened: a passing database lock (SQLite, several writing threads) must
    # not lose its outcome, or the row would be sent again once its lease ran out.
    def record() -> DeliveryAttempt:
        with transaction.atomic():
            return _record(notification, now=now, detail=detail, error=error, duration_ms=duration_ms)

    return db_retry(record)


def _record(
    notification: Notification,
    *,
    now: datetime.datetime,
    detail: str | None,
    error: DeliveryError | None,
    duration_ms: int,
) -> DeliveryAttempt:
    # Only the claim we hold may be finished: if the lease ran out and another sender took the
    # row, this update matches nothing and that sender's outcome stands.
    mine = Notification.objects.filter(id=notification.id, state=Notification.SENDING, attempts=notification.attempts)
    channel_rows = Channel.objects.filter(id=notification.channel_id)
    if error is None:
        if not mine.update(state=Notification.SENT, sent_at=now, claimed_until=None, last_error=""):
            logger.warning("notification %s was re-claimed while being sent (lease ran out)", notification.id)
        channel_rows.update(last_sent_at=now)
        return _log(notification, now=now, ok=True, detail=detail, duration_ms=duration_ms)

    gave_up = error.retry and now - notification.created_at >= GIVE_UP_AFTER
    will_retry = error.retry and not gave_up
    message = error.message + (f" (gave up after {notification.attempts} attempts)" if gave_up else "")
    if will_retry:
        next_at = now + retry_delay(attempts=notification.attempts, retry_after=error.retry_after)
        finished = mine.update(
            state=Notification.PENDING, next_attempt_at=next_at, claimed_until=None, last_error=message
        )
    else:
        finished = mine.update(state=Notification.FAILED, claimed_until=None, last_error=message)
    if not finished:
        logger.warning(
            "notification %s was re-claimed while being sent (lease ran out); this failure is only logged",
            notification.id,
        )
    else:
        channel_rows.update(last_error=message, last_error_at=now)
        if will_retry:
            # The receiver is most likely down for every row of this channel: hold the others
            # back to the same moment rather than spending a timeout on each of them now.
            Notification.objects.filter(
                channel_id=notification.channel_id, state=Notification.PENDING, next_attempt_at__lt=next_at
            ).exclude(id=notification.id).update(next_attempt_at=next_at)
    return _log(notification, now=now, ok=False, will_retry=will_retry, detail=message, duration_ms=duration_ms)


def _log(
    notification: Notification, *, now, ok: bool, detail: str, duration_ms: int, will_retry: bool = False
) -> DeliveryAttempt:
    entry = DeliveryAttempt(
        notification_id=notification.id,
        channel_id=notification.channel_id,
        number=notification.attempts,
        at=now,
        ok=ok,
        will_retry=will_retry,
        detail=detail[:2000],
        duration_ms=duration_ms,
    )
    # The channel (and with it this row) may have been deleted while it was being sent: then the
    # attempt is returned to the caller but not stored (there is no log left to store it in).
    if Notification.objects.filter(id=notification.id).exists():
        try:
            with transaction.atomic():
                entry.save()
        except IntegrityError:
            logger.info("notification %s was deleted while being sent; attempt not logged", notification.id)
    return entry


def send_due(
    *, now: datetime.datetime | None = None, limit: int = 100, budget_s: float | None = None, key_prefix: str = ""
) -> int:
    """Deliver up to ``limit`` due notifications; returns how many were delivered. With
    ``budget_s``, no new delivery starts once that many seconds have gone by (at least one is
    always tried), so a caller on a loop that must keep ticking is held up by at most the budget
    plus one delivery's timeout; what is left goes on the next call. ``key_prefix`` keeps to the
    rows whose idempotency key starts with it (a standby monitor sends only its own)."""
    now = now or timezone.now()
    started = time.monotonic()
    delivered = attempted = 0
    held_back: set[int] = set()
    for candidate in due_candidates(now=now, limit=limit, key_prefix=key_prefix):
        if budget_s is not None and attempted and time.monotonic() - started >= budget_s:
            break
        if candidate.channel_id in held_back:
            continue
        result = attempt(candidate, now=now)
        if result is None:
            continue
        attempted += 1
        if result.ok:
            delivered += 1
        elif result.will_retry:
            held_back.add(candidate.channel_id)
    return delivered


def send_test(*, channel: Channel, requested_by: str, now: datetime.datetime | None = None) -> DeliveryAttempt:
    """Put a TEST notification for ``channel`` in the outbox and deliver it now (even if the
    channel is disabled: that is how an admin checks it before enabling it). If it fails with a
    retryable error it stays in the outbox and is retried like any other notification."""
    now = now or timezone.now()
    link = absolute_url(reverse("channel_log", args=[channel.pk]))
    # Created already claimed by this call (attempt 1, leased), so a sender running at the same
    # moment cannot take it.
    notification = Notification.objects.create(
        channel=channel,
        idempotency_key=f"test:{uuid.uuid4().hex}",
        kind=Notification.TEST,
        subject=f"[Queuewatch] Test notification for “{channel.name}”",
        payload={
            "status": "firing",
            "kind": Notification.TEST,
            "group_key": f"test:{channel.pk}",
            "rule": {"id": None, "name": "Test notification", "kind": "test"},
            "alerts": [
                {
                    "fingerprint": "test",
                    "target": {"connection": None, "prefix": None, "queue": None},
                    "state": "firing",
                    "value": None,
                    "threshold": None,
                    "summary": f"A test sent by {requested_by}. If you can read this, the channel works.",
                    "url": link,
                    "started_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "ended_at": None,
                    "silenced": False,
                }
            ],
        },
        state=Notification.SENDING,
        attempts=1,
        claimed_until=now + CLAIM_LEASE,
        created_at=now,
        next_attempt_at=now,
    )
    return _deliver_claimed(Notification.objects.select_related("channel").get(id=notification.id), now=now)


KEEP_FINISHED = datetime.timedelta(days=30)


def prune_outbox(*, now: datetime.datetime | None = None, keep: datetime.timedelta = KEEP_FINISHED) -> int:
    """Delete sent and failed notifications older than ``keep``, with their delivery log (rows
    still waiting are never touched). Returns how many notifications went. For the monitor's
    scheduler, next to history pruning."""
    now = now or timezone.now()
    old = Notification.objects.filter(state__in=[Notification.SENT, Notification.FAILED], created_at__lt=now - keep)
    ids = list(old.values_list("id", flat=True)[:10_000])  # bounded, so one run never holds a long lock
    Notification.objects.filter(id__in=ids).delete()
    return len(ids)
