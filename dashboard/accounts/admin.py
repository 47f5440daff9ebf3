"""Scoped grants in the Django admin (staff only): who holds which role on which queues
(``dashboard.accounts.scopes``). Each edit is an audit row, like every admin edit."""

from django.contrib import admin

from dashboard.accounts.models import QueueGrant


@admin.register(QueueGrant)
class QueueGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "group", "role", "connection", "queue_glob")
    list_filter = ("role", "connection")
    search_fields = ("user__username", "group__name", "queue_glob")
