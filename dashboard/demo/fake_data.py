"""Made-up but realistic job data, and the exceptions the processors raise.

The exceptions are real classes raised from nested calls so the dashboard shows real Python
stack traces, not strings.
"""

from __future__ import annotations

import random
import secrets

# --- Failures raised by the processors (all real exceptions, from nested calls) --------------


class GatewayTimeout(Exception):
    pass


class SmtpTemporaryError(Exception):
    pass


class UnsupportedImageFormat(Exception):
    pass


class StorageUploadTimeout(Exception):
    pass


class WebhookDeliveryError(Exception):
    pass


# --- Fake data -------------------------------------------------------------------------------

FIRST_NAMES = ("ada", "grace", "alan", "linus", "margaret", "ken", "barbara", "dennis", "radia", "guido")
DOMAINS = ("example.com", "example.org", "example.net", "mail.example.io")
CURRENCIES = ("EUR", "USD", "GBP")
LOCALES = ("en-GB", "de-DE", "fr-FR", "nl-NL")
WEBHOOK_ENDPOINTS = (
    "https://hooks.shop.example.com/orders",
    "https://erp.example.org/api/bullmq-callback",
    "https://crm.example.net/webhooks/payments",
)
DOWN_ENDPOINT = "https://legacy-hooks.down.example/notify"  # always answers 503
WEBHOOK_EVENTS = ("order.created", "order.paid", "order.shipped", "refund.created")
DECLINED_CARD = "tok_chargeDeclinedInsufficientFunds"


def email_address(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)}.{rng.randint(1, 999)}@{rng.choice(DOMAINS)}"


def api_key() -> str:
    return "sk_live_" + secrets.token_hex(12)
