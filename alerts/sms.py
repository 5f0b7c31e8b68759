"""SMS through an HTTP gateway with Twilio's Messages API shape.

``POST {base_url}/2010-04-01/Accounts/{account_sid}/Messages.json`` with the
form fields ``To``, ``From``, ``Body`` and HTTP basic auth ``account_sid:auth_token``
(Twilio's documented API; other gateways offer the same shape). ``base_url`` is
configurable so tests, a regional endpoint or a compatible gateway can stand in.
The auth token crosses the wire in that header, so ``base_url`` must be https;
plain http only to a stand-in on loopback with ``allow_insecure_http`` (checked at
load time and again before each POST, alerts/http.py). The token is never part of
a log line, an error text or the settings' repr.

The body is one segment: at most 160 characters of the GSM 7-bit alphabet
(3GPP TS 23.038; alerts/gsm7.py). ``§`` is in that alphabet, so a citation
costs nothing extra; what is not (``…``, ``³``, ``–``, an emoji) would switch
the whole message to UCS-2 and 70 characters a segment, so alerts/messages.py
transliterates every piece of data it puts in. ``transmit`` checks it again
and fails permanently rather than send a body that would be billed as several
segments (that would be a bug upstream, and the audit log says so).

With ``links`` (alerts/acklinks.py) each SMS ends ``ACK <code>`` (the officer
replies with it) and the signed acknowledgement link for its recipient.
Rate limiting is not here: the delivery worker applies it.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass, field

from alerts.channel import DeliveryFailed, DirectSend, Message
from alerts.gsm7 import is_gsm7, segments, sms_units
from alerts.http import post
from alerts.messages import sms_text
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
        if self.links is None:
            return {"body": sms_text(note, self.site)}
        answer = self.answer(note, address)
        link = answer.ack_url or answer.alert_url  # every text has a link
        return {"body": sms_text(note, self.site, code=self.links.code(note.alert.id), link=link)}

    def transmit(self, address: str, message: Message, delivery: str) -> None:
        body = message["body"]
        problem = one_segment_problem(body)
        if problem is not None:  # a bug upstream: the gateway would bill several parts
            raise DeliveryFailed(problem, permanent=True)
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


def one_segment_problem(body: str) -> str | None:
    """Why ``body`` is not one GSM-7 segment, or None when it is."""
    if not is_gsm7(body):
        bad = sorted({ch for ch in body if not is_gsm7(ch)})
        return (
            f"SMS body is not GSM-7 ({''.join(bad)!r} would make it UCS-2, "
            f"{segments(body)} segments): refusing to send it"
        )
    if segments(body) > 1:
        return (
            f"SMS body is {sms_units(body)} GSM-7 characters, {segments(body)} segments "
            "(max 160, one segment): refusing to send it"
        )
    return None
