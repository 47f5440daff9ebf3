"""The job processors of the demo queues: a little real work (nested calls, logs, progress)
and realistic failures — transient ones that retries fix, an outage of the payment gateway that
outlasts the retries (those jobs are dead-lettered and complete when redriven once it is over),
and ``UnrecoverableError`` or poison payloads that fail every attempt."""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bullmq import UnrecoverableError

from .fake_data import (
    DECLINED_CARD,
    DOWN_ENDPOINT,
    WEBHOOK_ENDPOINTS,
    GatewayTimeout,
    SmtpTemporaryError,
    StorageUploadTimeout,
    UnsupportedImageFormat,
    WebhookDeliveryError,
)


class Gateway:
    """The payment gateway as the payments processor sees it: up, or down until a moment (an
    outage the workload starts now and then). Per process: a worker started elsewhere (a test
    running the processor) sees it up."""

    def __init__(self) -> None:
        self.down_until = 0.0

    def take_down(self, seconds: float) -> None:
        self.down_until = time.monotonic() + seconds

    @property
    def down(self) -> bool:
        return time.monotonic() < self.down_until


GATEWAY = Gateway()


async def _work(lo: float, hi: float) -> None:
    await asyncio.sleep(random.uniform(lo, hi))


async def process_email(job, token):
    data = job.data
    if job.name == "send-digest":
        await job.log(f"building digest for audience {data.get('audience')!r}")
        await _work(0.2, 0.6)
        await job.updateProgress(100)
        return {"recipients": random.randint(50, 400)}
    message = _render_email(job.name, data)
    await job.log(f"rendered template {data['template']!r} ({len(message)} bytes) for {data['to']}")
    await job.updateProgress(30)
    await _work(0.1, 0.4)
    message_id = await _smtp_send(data["to"], message)
    await job.updateProgress(100)
    await job.log(f"accepted by smtp relay as {message_id}")
    return {"messageId": message_id}


def _render_email(name: str, data: dict) -> str:
    templates = {
        "welcome": "Welcome aboard, {to}!",
        "password-reset": "Reset your password: https://app.example.com/reset/{token}",
        "receipt": "Receipt for order {order_id}",
        "reminder": "You left something in your cart, {to}",
        "digest": "Your weekly digest, {to}",
    }
    template = templates[data["template"]]  # KeyError for retired templates: a real bug
    return template.format(**data)


async def _smtp_send(to: str, message: str) -> str:
    _validate_recipient(to)
    await _work(0.05, 0.3)
    if random.random() < 0.04:
        raise SmtpTemporaryError("421 4.7.0 smtp.example.com: too many connections, try again later")
    return f"<{secrets.token_hex(8)}@smtp.example.com>"


def _validate_recipient(address: str) -> None:
    local, _, domain = address.partition("@")
    if not local or "." not in domain or "@" in domain:
        raise UnrecoverableError(f"invalid recipient address {address!r}: will not retry")


async def process_payment(job, token):
    data = job.data
    customer = data["customer"]
    await job.log(f"{job.name} for order {data['order_id']} (customer {customer['id']})")
    await job.updateProgress(10)
    amount = _amount_in_cents(data)
    await _work(0.1, 0.4)
    await job.updateProgress(40)
    charge = await _call_gateway(job.name, data, amount)
    await job.updateProgress(90)
    await job.log(f"gateway answered {charge['status']} ({charge['id']})")
    await _work(0.05, 0.2)
    await job.updateProgress(100)
    return charge


def _amount_in_cents(data: dict) -> int:
    return _parse_cents(data["amount_cents"])


def _parse_cents(raw) -> int:
    value = int(raw)  # ValueError for the poison payload "12,50"
    if value <= 0:
        raise ValueError(f"amount must be positive, got {value}")
    return value


async def _call_gateway(operation: str, data: dict, amount: int) -> dict:
    # The card vault answers a decline before the charge reaches the gateway, so an outage never
    # hides one: a payment dead-lettered in an outage completes when redriven after it.
    _check_card(data)
    await _work(0.1, 0.5)
    if GATEWAY.down:
        raise GatewayTimeout("payment gateway unavailable: 503 Service Unavailable (POST /v1/charges)")
    return _interpret_gateway_response(operation, data, amount)


def _check_card(data: dict) -> None:
    if data.get("card") == DECLINED_CARD:
        raise UnrecoverableError("card_declined: insufficient_funds (the issuer refused; not retried)")


def _interpret_gateway_response(operation: str, data: dict, amount: int) -> dict:
    if random.random() < 0.1:
        raise GatewayTimeout("payment gateway timed out after 10000 ms (POST /v1/charges)")
    prefix = {"refund": "re", "capture": "cp"}.get(operation, "ch")
    return {
        "id": f"{prefix}_{secrets.token_hex(6)}",
        "status": "succeeded",
        "amount_cents": amount,
        "currency": data["currency"],
    }


async def process_thumbnail(job, token):
    data = job.data
    if job.name == "publish-gallery":
        children = await job.getChildrenValues()
        await job.log(f"publishing album {data['album_id']} with {len(children)} resized images")
        await _work(0.1, 0.4)
        await job.updateProgress(100)
        return {"album_id": data["album_id"], "images": len(children)}
    await job.log(f"fetching {data['image_url']}")
    image = _load_image(data["image_url"])
    sizes = data.get("sizes", [128])
    outputs = []
    for i, size in enumerate(sizes, 1):
        await _work(0.15, 0.7)
        outputs.append(await _upload(data["bucket"], image, size))
        await job.updateProgress({"stage": "resize", "done": i, "total": len(sizes)})
    await job.log(f"uploaded {len(outputs)} renditions")
    return {"renditions": outputs}


def _load_image(url: str) -> dict:
    header = _read_header(url)
    return {"url": url, "format": header}


def _read_header(url: str) -> str:
    extension = url.rsplit(".", 1)[-1].lower()
    if extension not in ("jpg", "jpeg", "png", "webp"):
        raise UnsupportedImageFormat(f"cannot identify image file {url!r} (format {extension!r} not supported)")
    return extension


async def _upload(bucket: str, image: dict, size: int) -> str:
    if random.random() < 0.02:
        raise StorageUploadTimeout(f"upload to s3://{bucket} timed out after 30 s")
    return f"s3://{bucket}/{size}/{image['url'].rsplit('/', 1)[-1]}"


async def process_report(job, token):
    data = job.data
    await job.log(f"report {data.get('report', job.name)!r} for {data.get('range', 'yesterday')}")
    rows = 0
    for stage in ("query", "aggregate", "render"):
        await _work(0.6, 1.6)
        rows += random.randint(1000, 20000)
        await job.updateProgress({"stage": stage, "rows": rows})
    return {"url": f"https://reports.example.com/{secrets.token_hex(6)}.{data.get('format', 'pdf')}", "rows": rows}


async def process_webhook(job, token):
    data = job.data
    if job.name == "ping-endpoints":
        await _work(0.05, 0.2)
        return {"healthy": len(WEBHOOK_ENDPOINTS), "down": [DOWN_ENDPOINT]}
    await job.log(f"POST {data['endpoint']} ({data['event']} {data['event_id']})")
    await job.updateProgress(20)
    status = await _deliver(data["endpoint"], data["payload"])
    await job.updateProgress(100)
    return {"status": status}


async def _deliver(endpoint: str, payload: dict) -> int:
    await _work(0.05, 0.6)
    return _check_response(endpoint, 503 if endpoint == DOWN_ENDPOINT else _remote_status())


def _remote_status() -> int:
    return random.choices((200, 202, 500, 504), weights=(80, 12, 4, 4))[0]


def _check_response(endpoint: str, status: int) -> int:
    if status >= 500:
        raise WebhookDeliveryError(f"POST {endpoint} -> {status}")
    return status


PROCESSORS: dict[str, Callable[[Any, str], Awaitable[Any]]] = {
    "emails": process_email,
    "payments": process_payment,
    "thumbnails": process_thumbnail,
    "reports": process_report,
    "webhooks": process_webhook,
}
