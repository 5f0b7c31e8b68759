"""Webhooks: the notification as JSON, POSTed to a URL (a chat bridge, a ticket system).

**Signature.** With a shared secret, every request carries::

    X-Siltwatch-Signature: t=1778000000,v1=<64 hex digits>

``t`` is the Unix time (seconds) of the attempt and ``v1`` the hex HMAC-SHA256,
keyed with the secret, of ``"<t>." + body`` (the exact body bytes). The scheme is
Stripe's and Slack's: the MAC proves the request came from us and was not altered,
and because the time is inside the MAC a receiver that refuses a ``t`` more than
five minutes from its own clock (:func:`verify`) also refuses a captured request
replayed later, which a MAC over the body alone (the old ``sha256=<hex>``, GitHub's
convention) could not. A receiver may see several ``v1=`` values (a secret being
rotated); one match is enough. Each retry is signed afresh with its own ``t``.

**At least once.** The body carries ``delivery_id`` (also in ``X-Siltwatch-Delivery``):
a retried or re-sent request has the same id and a receiver should ignore an id it
has seen; within the tolerance window that also covers a replay.

**The URL is a secret.** For chat services (Slack, Teams, Mattermost, Google Chat)
whoever knows the URL can post into the channel. It is therefore never logged nor
stored: the outbox, the audit log and every log line hold :func:`alerts.http.redact_url`
of it, and :meth:`WebhookSink.transmit` posts to the URL from the settings.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass, field

from alerts.channel import DirectSend, Message
from alerts.http import post, redact_url
from alerts.messages import webhook_document
from alerts.routing import Notification

SIGNATURE_HEADER = "X-Siltwatch-Signature"
DELIVERY_HEADER = "X-Siltwatch-Delivery"
TOLERANCE_S = 300  # five minutes, as Stripe and Slack: covers clock skew, not a replay later

_HEX_MAC = re.compile(r"^[0-9a-f]{64}$")
_MAX_HEADER = 1024


def _mac(secret: bytes, timestamp: int, body: bytes) -> str:
    return hmac.new(secret, f"{timestamp}.".encode("ascii") + body, hashlib.sha256).hexdigest()


def sign(secret: bytes, body: bytes, timestamp: int) -> str:
    """The signature header value for ``body`` sent at ``timestamp`` (Unix seconds)."""
    return f"t={timestamp},v1={_mac(secret, timestamp, body)}"


def signature_problem(
    secret: bytes,
    body: bytes,
    header: str | None,
    now: float,
    tolerance_s: float = TOLERANCE_S,
) -> str | None:
    """Why a receiver must refuse this request, or None when it may trust it.

    Refused: no header or a garbled one, a MAC that does not match (compared in
    constant time), and a ``t`` more than ``tolerance_s`` before ``now`` (a captured
    request replayed later) or after it (a clock far ahead, or a forged future time).
    """
    if not header:
        return "no signature header"
    if len(header) > _MAX_HEADER:
        return "signature header too long"
    timestamps: list[str] = []
    macs: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            return "garbled signature header"
        if key == "t":
            timestamps.append(value)
        elif key == "v1":
            macs.append(value)
        # other keys (a future v2) are ignored, as Stripe's receivers do
    if len(timestamps) != 1 or not timestamps[0].isascii() or not timestamps[0].isdigit():
        return "garbled signature header: expected one t=<unix seconds>"
    if not macs or not all(_HEX_MAC.match(m) for m in macs):
        return "garbled signature header: expected v1=<64 hex digits>"
    timestamp = int(timestamps[0])
    expected = _mac(secret, timestamp, body)
    # Compare every candidate (no early exit) so the time taken reveals nothing.
    matched = False
    for candidate in macs:
        matched |= hmac.compare_digest(expected, candidate)
    if not matched:
        return "signature does not match"
    age = now - timestamp
    if age > tolerance_s:
        return f"signed {age:.0f} s ago, more than {tolerance_s:g} s: refused as a replay"
    if -age > tolerance_s:
        return f"signed {-age:.0f} s in the future, more than {tolerance_s:g} s: refused"
    return None


def verify(
    secret: bytes,
    body: bytes,
    header: str | None,
    now: float,
    tolerance_s: float = TOLERANCE_S,
) -> bool:
    """What a receiver does: True only for a fresh request signed with ``secret``."""
    return signature_problem(secret, body, header, now, tolerance_s) is None


@dataclass(frozen=True)
class WebhookSettings:
    url: str = field(repr=False)  # a credential for chat services: see the module docstring
    secret: bytes | None = field(default=None, repr=False)
    timeout_s: float = 30.0
    allow_insecure_http: bool = False  # http:// URL, to a loopback receiver only


class WebhookSink(DirectSend[WebhookSettings]):
    """Webhook channel: one POST per notification.

    Its 'address' is the redacted URL (what the outbox and logs keep); the POST goes to
    the URL in the settings.
    """

    name = "webhook"

    @property
    def shown_url(self) -> str:
        return redact_url(self.settings.url)

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [("webhook", self.shown_url)]

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        doc = webhook_document(note, self.site, delivery)
        return {"json": json.dumps(doc, ensure_ascii=False, sort_keys=True)}

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        # ``address`` is the redacted form; a row written before a URL change still goes
        # to the URL configured now (the old one may be revoked).
        body = message["json"].encode("utf-8")
        now = self.clock() if self.clock else time.time()
        headers = {"Content-Type": "application/json", DELIVERY_HEADER: delivery}
        if self.settings.secret:
            headers[SIGNATURE_HEADER] = sign(self.settings.secret, body, int(now))
        post(
            self.settings.url,
            body,
            headers,
            timeout_s=self.settings.timeout_s,
            now=now,
            allow_insecure_http=self.settings.allow_insecure_http,
            shown_as=self.shown_url,
        )
