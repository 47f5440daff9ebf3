from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "dashboard.alerts"
    label = "alerts"
    verbose_name = "Queuewatch alerting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from dashboard.alerts import scoped

        scoped.register()
