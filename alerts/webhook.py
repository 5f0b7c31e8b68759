"""Webhooks: the notification as JSON, POSTed to a URL (a chat bridge, a ticket system).

With a shared secret, the header ``X-Siltwatch-Signature: sha256=<hex>`` carries
HMAC-SHA256 of the exact body bytes, so the receiver can check that the request
came from us and was not altered (the GitHub webhook convention). The body carries
``delivery_id`` (also in ``X-Siltwatch-Delivery``): delivery is at-least-once and a
receiver should ignore an id it has seen.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass

from alerts.channel import DirectSend, Message
from alerts.http import post
from alerts.messages import SiteLabel, webhook_document
from alerts.routing import Notification

SIGNATURE_HEADER = "X-Siltwatch-Signature"
DELIVERY_HEADER = "X-Siltwatch-Delivery"


def sign(secret: bytes, body: bytes) -> str:
    """The signature header value for ``body``."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    """What a receiver does: constant-time comparison of the expected signature."""
    return header is not None and hmac.compare_digest(sign(secret, body), header)


@dataclass(frozen=True)
class WebhookSettings:
    url: str
    secret: bytes | None = None
    timeout_s: float = 30.0


class WebhookSink(DirectSend):
    """Webhook channel: one POST per notification (the URL is the 'address')."""

    name = "webhook"

    def __init__(
        self,
        settings: WebhookSettings,
        site: SiteLabel,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self.site = site
        self.clock = clock

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [("webhook", self.settings.url)]

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        doc = webhook_document(note, self.site, delivery)
        return {"json": json.dumps(doc, ensure_ascii=False, sort_keys=True)}

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        body = message["json"].encode("utf-8")
        headers = {"Content-Type": "application/json", DELIVERY_HEADER: delivery}
        if self.settings.secret:
            headers[SIGNATURE_HEADER] = sign(self.settings.secret, body)
        post(
            address,
            body,
            headers,
            timeout_s=self.settings.timeout_s,
            now=self.clock() if self.clock else None,
        )
