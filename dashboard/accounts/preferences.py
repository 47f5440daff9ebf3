"""What a user chose for themselves and keeps across browsers: for now, the language."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class UserPreference(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference")
    # Blank: follow the browser (cookie, then Accept-Language).
    language = models.CharField(max_length=10, blank=True, default="")

    def __str__(self):
        return f"{self.user} {self.language or '-'}"
