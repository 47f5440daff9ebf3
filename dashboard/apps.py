from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Queuewatch"

    def ready(self):
        # Every admin edit (any model) is also an audit row: the admin writes a LogEntry for each.
        from django.contrib.admin.models import LogEntry
        from django.db.models.signals import post_save

        from dashboard.accounts import language  # noqa: F401  (connects the saved-language-at-login receiver)
        from dashboard.live import socket_sessions

        socket_sessions.connect_signals()  # logout, deactivation, password change close open sockets

        post_save.connect(_admin_edit_audited, sender=LogEntry, dispatch_uid="queuewatch-admin-audit")


def _admin_edit_audited(sender, instance, created, **kwargs):
    if created:
        from dashboard.audit import log as audit

        audit.admin_edit(instance)
