"""Alert rules, alert history, silences, maintenance windows and notification channels (under
/alerts/)."""

from django.urls import include, path

from dashboard.alerts import views

urlpatterns = [
    path("", views.history, name="alert_history"),
    path("rules/", views.rules, name="alert_rules"),
    path("rules/new", views.rule_edit, name="alert_rule_new"),
    path("rules/fields", views.rule_kind_fields, name="alert_rule_fields"),
    path("rules/<int:rule_id>/", views.rule_detail, name="alert_rule"),
    path("rules/<int:rule_id>/edit", views.rule_edit, name="alert_rule_edit"),
    path("rules/<int:rule_id>/delete", views.rule_delete, name="alert_rule_delete"),
    path("silences/", views.silences, name="silences"),
    path("silences/new", views.silence_new, name="silence_new"),
    path("silences/<int:silence_id>/expire", views.silence_expire, name="silence_expire"),
    path("windows/new", views.window_new, name="window_new"),
    path("windows/<int:window_id>/delete", views.window_delete, name="window_delete"),
    path("cron-preview", views.cron_preview, name="cron_preview"),
    path("channels/", include("dashboard.alerts.channels.urls")),
]
