"""API tokens: the bearer credentials of the JSON API and /metrics."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

TOKEN_PREFIX = "qw_"
# What a token may be used for; its effective rights are the minimum of these and its user's
# role (dashboard.accounts.auth.role_of). ``metrics`` is /metrics only.
READ, ACT, ADMIN_SCOPE, METRICS = "read", "act", "admin", "metrics"
SCOPES = (READ, ACT, ADMIN_SCOPE, METRICS)
SCOPE_ROLES = ((ADMIN_SCOPE, "admin"), (ACT, "operator"), (READ, "viewer"))  # the highest role each scope allows


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """A per-user bearer token for the JSON API. Only the SHA-256 of the token is stored, so
    a leaked database does not leak usable tokens; the token itself is shown once. A revoked or
    expired token is kept (for the record) but authenticates nobody."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters of the token, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    scopes = models.JSONField(default=list, help_text="Any of read, act, admin, metrics.")
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user} {self.hint}…"

    @property
    def status(self) -> str:
        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "active"

    @classmethod
    def issue(cls, user, *, scopes=SCOPES, expires_at=None) -> tuple[ApiToken, str]:
        """A new token. By default it has every scope, so it acts with its user's role."""
        unknown = set(scopes) - set(SCOPES)
        if unknown or not scopes:
            raise ValueError(f"scopes must be some of {', '.join(SCOPES)} (got {', '.join(sorted(unknown)) or 'none'})")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(
            user=user,
            token_hash=hash_token(token),
            hint=token[:10],
            scopes=[s for s in SCOPES if s in scopes],
            expires_at=expires_at,
        )
        return row, token

    @classmethod
    def valid(cls, token: str) -> ApiToken | None:
        """The token's row when it may be used now: known, not revoked, not expired, user active."""
        now = timezone.now()
        row = cls.objects.select_related("user").filter(token_hash=hash_token(token), revoked_at__isnull=True).first()
        if row is None or not row.user.is_active or (row.expires_at and row.expires_at <= now):
            return None
        # Record use at most once a minute to keep API reads from writing on every call.
        if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
            cls.objects.filter(pk=row.pk).update(last_used_at=now)
        return row

    @classmethod
    def user_for(cls, token: str):
        row = cls.valid(token)
        return row.user if row else None


class QueueGrant(models.Model):
    """A role on some queues only: for a user or a group, on one connection (or any) and the
    queue names matching a glob (or any). A user's role on a queue is the highest of their
    global role and the grants matching it (``dashboard.accounts.scopes``); a user with grants
    and no global role group sees the queues their grants match, and nothing else."""

    ROLES = [(r, r) for r in ("viewer", "operator", "admin")]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="queue_grants"
    )
    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="queue_grants"
    )
    role = models.CharField(max_length=10, choices=ROLES, default="viewer")
    connection = models.CharField(max_length=40, blank=True, help_text="Empty: every connection.")
    queue_glob = models.CharField(
        max_length=200, blank=True, help_text="Queue name or glob, e.g. tenant-a-*. Empty: every queue."
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=False, group__isnull=True)
                | models.Q(user__isnull=True, group__isnull=False),
                name="queue_grant_user_xor_group",
                violation_error_message=_("A grant is for one user or for one group: choose one of the two."),
            )
        ]

    def __str__(self):
        who = self.user or self.group
        return f"{who}: {self.role} on {self.connection or '*'}/{self.queue_glob or '*'}"
