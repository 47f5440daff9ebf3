"""API tokens: the bearer credentials of the JSON API and /metrics."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

TOKEN_PREFIX = "qw_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    """A per-user bearer token for the JSON API. Only the SHA-256 of the token is stored, so
    a leaked database does not leak usable tokens; the token itself is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    token_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=12, help_text="First characters of the token, to tell tokens apart.")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user} {self.hint}…"

    @classmethod
    def issue(cls, user) -> tuple["ApiToken", str]:
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, token_hash=hash_token(token), hint=token[:10])
        return row, token

    @classmethod
    def user_for(cls, token: str):
        row = cls.objects.select_related("user").filter(token_hash=hash_token(token)).first()
        if row is None or not row.user.is_active:
            return None
        # Record use at most once a minute to keep API reads from writing on every call.
        now = timezone.now()
        if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
            cls.objects.filter(pk=row.pk).update(last_used_at=now)
        return row.user
