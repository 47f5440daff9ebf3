from django.urls import path

from dashboard.alerts.channels import views

urlpatterns = [
    path("", views.channel_list, name="channels"),
    path("new/", views.channel_create, name="channel_new"),
    path("<int:channel_id>/edit/", views.channel_edit, name="channel_edit"),
    path("<int:channel_id>/delete/", views.channel_delete, name="channel_delete"),
    path("<int:channel_id>/test/", views.channel_send_test, name="channel_test"),
    path("<int:channel_id>/log/", views.channel_log, name="channel_log"),
]
