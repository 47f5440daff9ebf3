from django.db import migrations, models


def existing_tokens_keep_their_users_role(apps, schema_editor):
    # Tokens issued before scopes existed acted with their user's role: every scope keeps
    # exactly that (the role still caps them) until they are rotated. See docs/operations.md,
    # "Upgrading".
    apps.get_model("dashboard", "ApiToken").objects.update(scopes=["read", "act", "admin", "metrics"])


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0005_queuepoint_attempt_failed")]

    operations = [
        migrations.AddField("apitoken", "scopes", models.JSONField(default=list, help_text="Any of read, act, admin, metrics.")),
        migrations.AddField("apitoken", "expires_at", models.DateTimeField(blank=True, null=True)),
        migrations.AddField("apitoken", "revoked_at", models.DateTimeField(blank=True, null=True)),
        migrations.RunPython(existing_tokens_keep_their_users_role, migrations.RunPython.noop),
    ]
