"""SMS through an HTTP gateway with Twilio's Messages API shape.

``POST {base_url}/2010-04-01/Accounts/{account_sid}/Messages.json`` with the
form fields ``To``, ``From``, ``Body`` and HTTP basic auth ``account_sid:auth_token``
(Twilio's documented API; other gateways offer the same shape). ``base_url`` is
configurable so tests, a regional endpoint or a compatible gateway can stand in.
The auth token crosses the wire in that header, so ``base_url`` must be https;
plain http only to a stand-in on loopback with ``allow_insecure_http`` (checked at
load time and again before each POST, alerts/http.py). The token is never part of
a log line, an error text or the settings' repr.

The body is at most 320 characters (two concatenated GSM segments; with § in a
citation the gateway uses UCS-2 and it becomes five, which is still one message
on the phone). Rate limiting is not here: the delivery worker applies it.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass, field

from alerts.channel import DeliveryFailed, DirectSend, Message
from alerts.http import post
from alerts.messages import SMS_MAX_CHARS, sms_length, sms_text
from alerts.routing import Notification


@dataclass(frozen=True)
class SmsSettings:
    base_url: str
    account_sid: str
    auth_token: str = field(repr=False)
    from_number: str
    timeout_s: float = 30.0
    allow_insecure_http: bool = False  # http:// base_url, to a loopback stand-in only


class SmsSink(DirectSend[SmsSettings]):
    """SMS channel: one text per recipient with a phone number."""

    name = "sms"

    @property
    def url(self) -> str:
        sid = urllib.parse.quote(self.settings.account_sid, safe="")
        return f"{self.settings.base_url.rstrip('/')}/2010-04-01/Accounts/{sid}/Messages.json"

    def addresses(self, note: Notification) -> list[tuple[str, str]]:
        return [(c.name, c.phone) for c in note.recipients if c.phone]

    def render(self, note: Notification, address: str, delivery: str) -> Message:
        return {"body": sms_text(note, self.site)}

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        body = message["body"]
        if sms_length(body) > SMS_MAX_CHARS:  # a bug upstream; the gateway would bill 3+ parts
            raise DeliveryFailed(f"SMS body is {sms_length(body)} chars (max 320)", permanent=True)
        s = self.settings
        form = urllib.parse.urlencode({"To": address, "From": s.from_number, "Body": body})
        token = base64.b64encode(f"{s.account_sid}:{s.auth_token}".encode()).decode("ascii")
        post(
            self.url,
            form.encode("utf-8"),
            {
                "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
                "Authorization": f"Basic {token}",
                "Accept": "application/json",
            },
            timeout_s=s.timeout_s,
            now=self.clock() if self.clock else None,
            allow_insecure_http=s.allow_insecure_http,
        )
