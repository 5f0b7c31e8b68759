"""The SMS each notification becomes, shown instead of sent: the demo prints them.

A text is rendered by the real SMS channel (alerts/sms.py ``SmsSink.render``:
the same words, ACK code and signed link a phone would get) and measured with
alerts/gsm7.py, so the demo shows what a gateway would bill: one segment of at
most 160 GSM-7 characters, or the reason it is not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from alerts.acklinks import Links
from alerts.gsm7 import is_gsm7, segments, sms_units
from alerts.messages import SiteLabel
from alerts.routing import Notification
from alerts.sms import SmsSettings, SmsSink

# Never used to send: SmsPreview only renders. (A gateway's real settings live in NOTIFY.toml.)
_NOT_SENT = SmsSettings(
    base_url="http://127.0.0.1",
    account_sid="preview",
    auth_token="",
    from_number="+10000000000",
    allow_insecure_http=True,
)


class SmsPreview:
    """A sink that prints each recipient's SMS with its segment count, and keeps the counts."""

    def __init__(
        self,
        site: SiteLabel,
        links: Links | None,
        clock: Callable[[], float] | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.channel = SmsSink(_NOT_SENT, site, clock, links=links)
        self.stream = stream or sys.stdout
        self.counts: list[int] = []

    def send(self, note: Notification) -> None:
        for name, phone in self.channel.addresses(note):
            body = self.channel.render(note, phone, "preview")["body"]
            parts = segments(body)
            self.counts.append(parts)
            coding = "GSM-7" if is_gsm7(body) else "UCS-2"
            print(
                f"    SMS to {name}: {parts} segment{'s' if parts != 1 else ''} "
                f"({sms_units(body)} {coding} characters): {body}",
                file=self.stream,
            )
        self.stream.flush()

    def summary(self) -> str:
        """One line: how many texts, and how many segments each took."""
        return self.summarise(self.counts)

    @staticmethod
    def summarise(counts: list[int]) -> str:
        if not counts:
            return "SMS: none (no recipient has a phone number)"
        by = {n: counts.count(n) for n in sorted(set(counts))}
        spread = ", ".join(f"{k} with {n} segment{'s' if n != 1 else ''}" for n, k in by.items())
        return f"SMS: {len(counts)} texts, {spread}"
