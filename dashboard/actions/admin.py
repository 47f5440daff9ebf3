"""Error triage rules in the Django admin (staff only): the model's ``clean`` refuses a pattern
that is invalid, too long or too slow (``queues.error_triage.validate_pattern``)."""

from django.contrib import admin

from dashboard.actions.models import TriageRule


@admin.register(TriageRule)
class TriageRuleAdmin(admin.ModelAdmin):
    list_display = ("position", "pattern", "error_class", "comment")
    list_display_links = ("pattern",)
    list_editable = ("position",)
    ordering = ("position", "id")
    readonly_fields = ("created_at",)
