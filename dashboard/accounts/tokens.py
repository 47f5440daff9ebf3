"""Issuing and revoking API tokens, for the CLI and the token page alike: each one is written
to the audit log. (Who may revoke which token: ``dashboard.accounts.auth.may_manage_token``.)"""

from __future__ import annotations

from django.utils import timezone

from dashboard.accounts.models import ApiToken
from dashboard.audit import log as audit


def issue(user, *, scopes, expires_at, by, via: str) -> tuple[ApiToken, str]:
    row, token = ApiToken.issue(user, scopes=scopes, expires_at=expires_at)
    audit.record_event(
        user=by,
        via=via,
        action="token.issue",
        target=f"token {row.pk} {row.hint}… of {user.username}",
        details={"scopes": ",".join(row.scopes), "expires": row.expires_at.isoformat() if row.expires_at else "never"},
    )
    return row, token


def revoke(row: ApiToken, *, by, via: str) -> bool:
    """Revoke ``row`` (once: False if it already was)."""
    done = bool(ApiToken.objects.filter(pk=row.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()))
    if done:
        audit.record_event(
            user=by, via=via, action="token.revoke", target=f"token {row.pk} {row.hint}… of {row.user.username}"
        )
    return done
