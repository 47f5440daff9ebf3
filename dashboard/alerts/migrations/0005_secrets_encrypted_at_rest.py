from django.db import migrations

import dashboard.core.crypto


def encrypt_existing(apps, schema_editor):
    """Signing secrets and webhook header values written before encryption: encrypt them with
    the configured key (QUEUEWATCH_ENCRYPTION_KEY, or the one derived from the secret key)."""
    from dashboard.core.crypto import encrypt_values

    Channel = apps.get_model("alerts", "Channel")
    for channel in Channel.objects.all():
        config = dict(channel.config or {})
        if isinstance(config.get("headers"), dict):
            config["headers"] = encrypt_values(config["headers"])
        channel.config = config
        channel.save(update_fields=["secret", "config"])  # the field encrypts the (plaintext) secret on save


class Migration(migrations.Migration):
    dependencies = [("alerts", "0004_kinds_from_registries")]

    operations = [
        migrations.AlterField("channel", "secret", dashboard.core.crypto.EncryptedTextField(blank=True)),
        migrations.RunPython(encrypt_existing, migrations.RunPython.noop),
    ]
