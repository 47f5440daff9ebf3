from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Queuewatch"

    def ready(self):
        # Every admin edit (any model) is also an audit row: the admin writes a LogEntry for each.
        from django.contrib.admin.models import LogEntry
        from django.db.models.signals import post_save

        from dashboard.accounts import language  # noqa: F401  (connects the saved-language-at-login receiver)
        from dashboard.live import socket_grants, socket_sessions

        socket_sessions.connect_signals()  # logout, deactivation, password change close open sockets
        socket_grants.connect_signals()  # a changed role or grant makes its user's sockets connect again

        post_save.connect(_admin_edit_audited, sender=LogEntry, dispatch_uid="queuewatch-admin-audit")
        # Several at once ("delete selected") are bulk-created, which sends no signal.
        if not getattr(LogEntry.objects, "audits_bulk", False):
            LogEntry.objects.__class__ = _audited_log_entries(type(LogEntry.objects))


def _admin_edit_audited(sender, instance, created, **kwargs):
    if created:
        from dashboard.audit import log as audit

        audit.admin_edit(instance)


def _audited_log_entries(manager_class):
    """``manager_class`` whose ``bulk_create`` also writes an audit row per entry."""

    class AuditedLogEntries(manager_class):
        audits_bulk = True

        def bulk_create(self, objs, *args, **kwargs):
            from dashboard.audit import log as audit

            created = super().bulk_create(objs, *args, **kwargs)
            for entry in created:
                audit.admin_edit(entry)
            return created

        # Migrations compare managers with ``==``: this one is the admin's own manager as far as
        # they are concerned (the audit is behaviour, not schema), so no migration is asked for.
        def __eq__(self, other):
            return isinstance(other, manager_class) and self._constructor_args == other._constructor_args

        __hash__ = manager_class.__hash__

    return AuditedLogEntries
