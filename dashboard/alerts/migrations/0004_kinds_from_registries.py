"""Rule and channel kinds are validated against their registries (``queues.alert_kinds``,
``dashboard.alerts.notifiers``) instead of fixed ``choices``, so adding a kind needs no
migration. Choices live only in Django's model state: this changes nothing in the database
(``sqlmigrate alerts 0004`` prints no SQL)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("alerts", "0003_rules_and_silences"),
    ]

    operations = [
        migrations.AlterField(model_name="alertrule", name="kind", field=models.CharField(max_length=30)),
        migrations.AlterField(model_name="channel", name="kind", field=models.CharField(max_length=20)),
    ]
