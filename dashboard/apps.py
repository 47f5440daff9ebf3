from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Queuewatch"

    def ready(self):
        from dashboard import i18n  # noqa: F401  (connects the saved-language-at-login receiver)
